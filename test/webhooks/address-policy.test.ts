// The webhook address policy (src/webhooks/address-policy.ts): every SSRF spelling is refused at
// registration, public destinations pass, and allowed networks re-open what the operator chose.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  checkWebhookUrl,
  parseAllowedNetworks,
  refusedAddressReason,
} from '../../src/webhooks/address-policy.js';

const none = parseAllowedNetworks(undefined);
const strict = { allowHttp: false, allowed: none };

function refusedAt(raw: string, policy = strict): string {
  const result = checkWebhookUrl(raw, policy);
  assert.equal(result.ok, false, `${raw.slice(0, 80)} should be refused`);
  return result.ok ? '' : result.reason;
}

describe('checkWebhookUrl refuses', () => {
  // [URL, a fragment the reason must contain]
  const cases: Array<[string, string | RegExp]> = [
    ['http://example.com/hook', 'PETSTORE_WEBHOOK_ALLOW_HTTP=true'],
    ['https://127.0.0.1/', '127.0.0.1 is a loopback address'],
    ['https://2130706433/', '127.0.0.1 is a loopback address'],
    ['https://0x7f000001/', '127.0.0.1 is a loopback address'],
    ['https://0177.0.0.1/', '127.0.0.1 is a loopback address'],
    ['https://127.1/', '127.0.0.1 is a loopback address'],
    ['https://0x7f.1/', '127.0.0.1 is a loopback address'],
    ['https://127.0.0.1./', '127.0.0.1 is a loopback address'],
    ['https://127.255.255.254/', 'loopback'],
    ['https://017700000001/', '127.0.0.1 is a loopback address'], // one octal number
    ['https://127.0.1/', '127.0.0.1 is a loopback address'],
    ['https://%31%32%37.0.0.1/', '127.0.0.1 is a loopback address'], // percent-encoded host
    ['https://\uff11\uff12\uff17.\uff10.\uff10.\uff11/', '127.0.0.1 is a loopback address'], // fullwidth digits
    ['https://127.0.0\t.1/', 'control characters; found U+0009'], // the parser would strip it: refused before parsing
    ['https://example.com/\r\nHost: x', 'control characters; found U+000D'],
    ['\u0000https://example.com/', 'control characters; found U+0000'],
    ['https://example.com/\u009b', 'control characters; found U+009B'],
    ['HTTPS://127.0.0.1/', '127.0.0.1 is a loopback address'],
    ['https:\\\\127.0.0.1\\hook', '127.0.0.1 is a loopback address'], // backslashes are slashes
    ['https:127.0.0.1', '127.0.0.1 is a loopback address'],
    ['https://example.com@127.0.0.1/', 'credentials'], // the host is 127.0.0.1; refused either way
    ['https://loc%61lhost/', 'localhost is this server itself'],
    ['https://localhost/', 'localhost is this server itself'],
    ['https://LOCALHOST/', 'localhost is this server itself'],
    ['https://localhost./', 'localhost. is this server itself'],
    ['https://foo.localhost/', 'foo.localhost is this server itself'],
    ['https://\u24dbocalhost/', 'localhost is this server itself'], // IDNA maps ⓛ to l
    ['https://[::1]/', '::1 is a loopback address'],
    ['https://[0:0:0:0:0:0:0:1]/', '::1 is a loopback address'],
    ['https://[::]/', ':: is the unspecified address'],
    ['https://[::ffff:127.0.0.1]/', 'IPv4-mapped address for 127.0.0.1, a loopback address'],
    ['https://[::ffff:7f00:1]/', 'IPv4-mapped address for 127.0.0.1, a loopback address'],
    ['https://[::ffff:169.254.169.254]/', 'IPv4-mapped address for 169.254.169.254'],
    ['https://[::127.0.0.1]/', 'IPv4-compatible'],
    ['https://[64:ff9b::a9fe:a9fe]/', 'NAT64 address for 169.254.169.254'],
    ['https://[2002:a00:1::]/', '6to4 address for 10.0.0.1'],
    ['https://10.0.0.1/', '10.0.0.1 is a private address'],
    ['https://172.16.0.1/', '172.16.0.1 is a private address'],
    ['https://172.31.255.255/', 'private'],
    ['https://192.168.1.1/', '192.168.1.1 is a private address'],
    ['https://169.254.169.254/latest/meta-data/', '169.254.169.254 is a link-local address'],
    ['https://100.64.0.1/', '100.64.0.1 is a carrier-grade NAT address'],
    ['https://0.0.0.0/', '0.0.0.0 is an unspecified'],
    ['https://0/', '0.0.0.0 is an unspecified'],
    ['https://224.0.0.1/', '224.0.0.1 is a multicast address'],
    ['https://240.0.0.1/', 'reserved'],
    ['https://255.255.255.255/', 'the broadcast address'],
    ['https://[fc00::1]/', 'fc00::1 is a unique local address'],
    ['https://[fd12:3456::1]/', 'unique local'],
    ['https://[fe80::1]/', 'fe80::1 is a link-local address'],
    ['https://[fe80::1%25eth0]/', 'not a valid absolute URL'], // WHATWG URLs have no zone index
    ['https://[ff02::1]/', 'multicast'],
    ['https://user:pw@example.com/', 'credentials'],
    ['https://user@example.com/', 'credentials'],
    ['https://example.com/hook#frag', 'fragment'],
    [`https://example.com/${'a'.repeat(2049 - 'https://example.com/'.length)}`, 'at most 2048 characters'],
    ['ftp://x', 'must use https, not ftp'],
    ['javascript:alert(1)', 'must use https'],
    ['file:///etc/passwd', 'must use https'],
    ['not a url', 'not a valid absolute URL'],
    ['/relative/path', 'not a valid absolute URL'],
    ['', 'not a valid absolute URL'],
    ['https://metadata.google.internal/computeMetadata/v1/', '.internal names are for private networks'],
    ['https://printer.local/', '.local names'],
    ['https://router.home.arpa/', '.home.arpa names'],
  ];
  for (const [raw, expected] of cases) {
    test(raw.length > 80 ? `a ${raw.length}-character URL` : raw || '(empty)', () => {
      const reason = refusedAt(raw);
      if (typeof expected === 'string') assert.ok(reason.includes(expected), reason);
      else assert.match(reason, expected);
    });
  }

  test('the http reason says how to fix it', () => {
    assert.equal(
      refusedAt('http://example.com/'),
      'webhook URLs must use https; http is allowed only when the server sets PETSTORE_WEBHOOK_ALLOW_HTTP=true for development',
    );
  });

  test('an IP-literal refusal says what to use instead', () => {
    assert.match(refusedAt('https://10.0.0.1/'), /use a public host name or address .*PETSTORE_WEBHOOK_ALLOWED_NETWORKS/);
  });
});

describe('checkWebhookUrl accepts', () => {
  for (const raw of [
    'https://example.com/hook',
    'https://93.184.216.34/',
    'https://[2606:2800:220:1:248:1893:25c8:1946]/hook',
    'https://[::ffff:93.184.216.34]/', // mapped, but the IPv4 address inside is public
    'https://hooks.example.com:8443/a/b?c=d',
    'https://internal-looking.example.com/', // names are checked on their addresses at connection time
  ]) {
    test(raw, () => {
      const result = checkWebhookUrl(raw, strict);
      assert.ok(result.ok, result.ok ? '' : result.reason);
    });
  }

  test('a 2048-character URL', () => {
    const raw = `https://example.com/${'a'.repeat(2048 - 'https://example.com/'.length)}`;
    assert.equal(raw.length, 2048);
    assert.equal(checkWebhookUrl(raw, strict).ok, true);
  });

  test('http when allowHttp is set', () => {
    assert.equal(checkWebhookUrl('http://example.com/hook', { allowHttp: true, allowed: none }).ok, true);
  });

  test('returns the normalized URL', () => {
    const result = checkWebhookUrl('  HTTPS://Example.COM:443/hook ', strict);
    assert.ok(result.ok);
    assert.equal(result.url.href, 'https://example.com/hook');
  });
});

describe('allowed networks', () => {
  const loopback = { allowHttp: true, allowed: parseAllowedNetworks('127.0.0.1/32') };

  test('127.0.0.1/32 re-opens 127.0.0.1 in every spelling, and localhost names', () => {
    for (const raw of ['http://127.0.0.1:3000/hook', 'http://2130706433/', 'http://127.1/', 'http://[::ffff:127.0.0.1]/', 'http://localhost:3000/', 'http://localhost./']) {
      const result = checkWebhookUrl(raw, loopback);
      assert.ok(result.ok, `${raw}: ${result.ok ? '' : result.reason}`);
    }
  });

  test('but nothing else', () => {
    for (const raw of ['http://127.0.0.2/', 'http://[::1]/', 'http://10.0.0.1/', 'http://169.254.169.254/']) {
      assert.equal(checkWebhookUrl(raw, loopback).ok, false, raw);
    }
  });

  test('never re-open 0.0.0.0, ::, multicast or broadcast', () => {
    const everything = parseAllowedNetworks('0.0.0.0/0, ::/0');
    for (const ip of ['0.0.0.0', '::', '224.0.0.1', '255.255.255.255', 'ff02::1']) {
      assert.ok(refusedAddressReason(ip, everything), ip);
    }
    for (const ip of ['127.0.0.1', '10.0.0.1', '::1', 'fd00::1']) {
      assert.equal(refusedAddressReason(ip, everything), undefined, ip);
    }
  });

  test('an internal name passes registration once networks are allowed (its addresses decide at connection time)', () => {
    const corp = { allowHttp: false, allowed: parseAllowedNetworks('10.1.2.0/24') };
    assert.equal(checkWebhookUrl('https://hooks.corp.internal/', corp).ok, true);
    assert.equal(checkWebhookUrl('https://localhost/', corp).ok, false, 'localhost needs loopback allowed');
  });

  test('parse IPv4 and IPv6 addresses and CIDRs, tolerating spaces and empty entries', () => {
    const allowed = parseAllowedNetworks(' 10.1.2.0/24 , 192.0.2.7, fd00:1::/64,, ::1 ,');
    assert.deepEqual(allowed.entries, ['10.1.2.0/24', '192.0.2.7', 'fd00:1::/64', '::1']);
    assert.ok(allowed.includes('10.1.2.200'));
    assert.ok(!allowed.includes('10.1.3.1'));
    assert.ok(allowed.includes('192.0.2.7'));
    assert.ok(allowed.includes('fd00:1::abcd'));
    assert.ok(!allowed.includes('fd00:2::1'));
    assert.ok(allowed.includes('::1'));
    assert.ok(!allowed.includes('not an ip'));
    assert.deepEqual(parseAllowedNetworks('').entries, []);
    assert.deepEqual(parseAllowedNetworks(undefined).entries, []);
  });

  test('a bad entry throws a message naming it and the expected form', () => {
    for (const bad of ['example.com', '10.0.0.0/33', '::1/129', '10.0.0.0/', '10.0.0.0/8x', '300.1.1.1', 'fe80::1%eth0', '10.0.0.0/-1']) {
      assert.throws(
        () => parseAllowedNetworks(`127.0.0.1/32,${bad}`),
        (error: Error) => error.message.startsWith('PETSTORE_WEBHOOK_ALLOWED_NETWORKS: ') && error.message.includes(`"${bad}"`),
        bad,
      );
    }
  });
});

describe('refusedAddressReason', () => {
  test('public addresses pass', () => {
    for (const ip of ['93.184.216.34', '8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '2002:808:808::1']) {
      assert.equal(refusedAddressReason(ip, none), undefined, ip);
    }
  });

  test('the range edges', () => {
    assert.equal(refusedAddressReason('172.15.255.255', none), undefined);
    assert.ok(refusedAddressReason('172.16.0.0', none));
    assert.ok(refusedAddressReason('172.31.255.255', none));
    assert.equal(refusedAddressReason('172.32.0.0', none), undefined);
    assert.equal(refusedAddressReason('100.63.255.255', none), undefined);
    assert.ok(refusedAddressReason('100.127.255.255', none));
    assert.equal(refusedAddressReason('100.128.0.0', none), undefined);
    assert.equal(refusedAddressReason('223.255.255.255', none), undefined);
    assert.equal(refusedAddressReason('fbff::1', none), undefined);
    assert.ok(refusedAddressReason('febf::1', none));
  });

  test('reasons are human', () => {
    assert.equal(refusedAddressReason('127.0.0.1', none), '127.0.0.1 is a loopback address');
    assert.equal(refusedAddressReason('10.0.0.1', none), '10.0.0.1 is a private address (RFC 1918)');
    assert.equal(refusedAddressReason('fe80::1%eth0', none), 'fe80::1%eth0 is a link-local address (fe80::/10)');
    assert.equal(refusedAddressReason('example.com', none), 'example.com is not an IP address');
    assert.equal(
      refusedAddressReason('::ffff:a9fe:a9fe', none),
      '::ffff:a9fe:a9fe is an IPv4-mapped address for 169.254.169.254, a link-local address (169.254.0.0/16, where cloud metadata services answer)',
    );
  });
});
