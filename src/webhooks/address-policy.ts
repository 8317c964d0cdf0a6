// Which webhook destinations the server may connect to (SSRF protection).
//
// Two checks use this policy: checkWebhookUrl when a URL is registered (the scheme, the shape
// and an IP-literal host), and the sender on every connection (the addresses the host name
// resolved to, and the address the socket actually connected to). A host name proves nothing
// at registration: DNS can answer differently later, so only the connection-time check is
// authoritative.
//
// Refused by default: every address that is not a public unicast address (loopback, private,
// link-local, CGNAT, multicast, reserved…). An operator can open networks with
// PETSTORE_WEBHOOK_ALLOWED_NETWORKS (for example an internal receiver, or 127.0.0.1/32 in
// development); an allowed network overrides the refusal, except for addresses that are never a
// valid unicast destination (0.0.0.0/8 and ::, which reach the local host; multicast; the
// broadcast address).
import net from 'node:net';

/** The networks an operator opened with PETSTORE_WEBHOOK_ALLOWED_NETWORKS. */
export interface AllowedNetworks {
  /** The entries as configured, for logs and messages. */
  readonly entries: readonly string[];
  /** Whether `ip` (IPv4 or IPv6; an IPv4-mapped IPv6 address matches its IPv4 entry) is inside one. */
  includes(ip: string): boolean;
}

const ENV_NAME = 'PETSTORE_WEBHOOK_ALLOWED_NETWORKS';

/**
 * Parses PETSTORE_WEBHOOK_ALLOWED_NETWORKS: comma-separated IP addresses or CIDRs, IPv4 or IPv6
 * (`10.1.2.0/24, 127.0.0.1/32, fd00:1::/64`). Empty or unset: nothing is allowed beyond public
 * addresses. Throws an Error naming the bad entry.
 *
 * A name is refused when ANY of its addresses is refused, so for http://localhost in development
 * allow both 127.0.0.1/32 and ::1/128 (localhost usually resolves to both).
 */
export function parseAllowedNetworks(raw: string | undefined): AllowedNetworks {
  const list = new net.BlockList();
  const entries: string[] = [];
  for (const part of (raw ?? '').split(',')) {
    const entry = part.trim();
    if (entry === '') continue; // tolerate "a, b," and an empty variable
    const slash = entry.indexOf('/');
    const address = slash === -1 ? entry : entry.slice(0, slash);
    const version = net.isIP(address);
    if (version === 0 || address.includes('%')) {
      throw new Error(
        `${ENV_NAME}: "${entry}" is not an IP address or CIDR; expected entries like 10.1.2.0/24, 127.0.0.1 or fd00::/8, separated by commas`,
      );
    }
    const type = version === 4 ? 'ipv4' : 'ipv6';
    if (slash === -1) {
      list.addAddress(address, type);
    } else {
      const prefixText = entry.slice(slash + 1);
      const max = version === 4 ? 32 : 128;
      const prefix = Number(prefixText);
      if (!/^\d{1,3}$/.test(prefixText) || prefix > max) {
        throw new Error(
          `${ENV_NAME}: "${entry}" has an invalid prefix length; an IPv${version} prefix is 0 to ${max}`,
        );
      }
      list.addSubnet(address, prefix, type);
    }
    entries.push(entry);
  }
  return {
    entries,
    includes(ip: string): boolean {
      const version = net.isIP(ip);
      if (version === 0) return false;
      return list.check(ip, version === 4 ? 'ipv4' : 'ipv6');
    },
  };
}

interface Classification {
  /** Completes "<ip> is …". */
  what: string;
  /** Whether an allowed network can re-open it. */
  overridable: boolean;
}

interface Rule extends Classification {
  list: net.BlockList;
}

function rule(cidrs: string[], type: 'ipv4' | 'ipv6', what: string, overridable = true): Rule {
  const list = new net.BlockList();
  for (const cidr of cidrs) {
    const [address = '', prefix = ''] = cidr.split('/');
    list.addSubnet(address, Number(prefix), type);
  }
  return { list, what, overridable };
}

// First match wins, so the narrower ranges come first.
const IPV4_RULES: Rule[] = [
  rule(['0.0.0.0/8'], 'ipv4', "an unspecified ('this network') address, which reaches the local host", false),
  rule(['127.0.0.0/8'], 'ipv4', 'a loopback address'),
  rule(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'], 'ipv4', 'a private address (RFC 1918)'),
  rule(['169.254.0.0/16'], 'ipv4', 'a link-local address (169.254.0.0/16, where cloud metadata services answer)'),
  rule(['100.64.0.0/10'], 'ipv4', 'a carrier-grade NAT address (100.64.0.0/10)'),
  rule(['192.0.0.0/24'], 'ipv4', 'an IETF protocol assignment address (192.0.0.0/24)'),
  rule(['192.0.2.0/24', '198.51.100.0/24', '203.0.113.0/24'], 'ipv4', 'a documentation address (TEST-NET)'),
  rule(['198.18.0.0/15'], 'ipv4', 'a benchmarking address (198.18.0.0/15)'),
  rule(['224.0.0.0/4'], 'ipv4', 'a multicast address', false),
  rule(['255.255.255.255/32'], 'ipv4', 'the broadcast address', false),
  rule(['240.0.0.0/4'], 'ipv4', 'a reserved address (240.0.0.0/4)'),
];

// IPv6 forms that carry an IPv4 address: classified by that address, since that is where the
// packets end up (the kernel for mapped ones, a NAT64 gateway or 6to4 relay for the others).
const IPV6_EMBEDDING: Array<{ list: net.BlockList; what: string; words: [number, number] }> = [
  { ...rule(['::ffff:0:0/96'], 'ipv6', 'an IPv4-mapped address'), words: [6, 7] },
  { ...rule(['::ffff:0:0:0/96'], 'ipv6', 'an IPv4-translated address'), words: [6, 7] },
  { ...rule(['64:ff9b::/96'], 'ipv6', 'a NAT64 address'), words: [6, 7] },
  { ...rule(['2002::/16'], 'ipv6', 'a 6to4 address'), words: [1, 2] },
];

const IPV6_RULES: Rule[] = [
  rule(['::/128'], 'ipv6', "the unspecified address, which reaches the local host", false),
  rule(['::1/128'], 'ipv6', 'a loopback address'),
  rule(['::/96'], 'ipv6', 'a deprecated IPv4-compatible address (::/96)'),
  rule(['64:ff9b:1::/48'], 'ipv6', 'a local-use NAT64 address (64:ff9b:1::/48)'),
  rule(['100::/64'], 'ipv6', 'a discard-only address (100::/64)'),
  rule(['2001:db8::/32'], 'ipv6', 'a documentation address (2001:db8::/32)'),
  rule(['2001::/32'], 'ipv6', 'a Teredo tunnel address (2001::/32)'),
  rule(['fc00::/7'], 'ipv6', 'a unique local address (fc00::/7)'),
  rule(['fe80::/10'], 'ipv6', 'a link-local address (fe80::/10)'),
  rule(['fec0::/10'], 'ipv6', 'a deprecated site-local address (fec0::/10)'),
  rule(['ff00::/8'], 'ipv6', 'a multicast address', false),
];

/** The eight 16-bit words of a valid IPv6 address (net.isIPv6 already said yes). */
function ipv6Words(ip: string): number[] {
  let text = ip;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((w) => parseInt(w, 16)));
  const [head = '', tail] = text.split('::');
  const first = parse(head);
  if (tail === undefined) return first;
  const last = parse(tail);
  return [...first, ...new Array<number>(8 - first.length - last.length).fill(0), ...last];
}

function classify(ip: string): Classification | undefined {
  const version = net.isIP(ip);
  if (version === 4) return IPV4_RULES.find((r) => r.list.check(ip, 'ipv4'));
  for (const embedding of IPV6_EMBEDDING) {
    if (!embedding.list.check(ip, 'ipv6')) continue;
    const words = ipv6Words(ip);
    const high = words[embedding.words[0]] ?? 0;
    const low = words[embedding.words[1]] ?? 0;
    const v4 = [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
    const inner = classify(v4);
    if (!inner) return undefined;
    return { what: `${embedding.what} for ${v4}, ${inner.what}`, overridable: inner.overridable };
  }
  return IPV6_RULES.find((r) => r.list.check(ip, 'ipv6'));
}

/**
 * Why the server must not connect to `ip`, or undefined when it may: "127.0.0.1 is a loopback
 * address". Anything that is not an IP address is refused too. A zone index (fe80::1%eth0) is
 * ignored for the classification.
 */
export function refusedAddressReason(ip: string, allowed: AllowedNetworks): string | undefined {
  const address = ip.replace(/%.*$/, '');
  if (net.isIP(address) === 0) return `${ip} is not an IP address`;
  const found = classify(address);
  if (!found) return undefined;
  if (found.overridable && allowed.includes(address)) return undefined;
  return `${ip} is ${found.what}`;
}

export const MAX_WEBHOOK_URL_LENGTH = 2048;

export interface WebhookUrlPolicy {
  /** PETSTORE_WEBHOOK_ALLOW_HTTP: accept http: URLs (development only). */
  allowHttp: boolean;
  allowed: AllowedNetworks;
}

export type WebhookUrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

// Names reserved for private use: they can only resolve to internal addresses, which the
// connection-time check would refuse anyway; refusing them here gives the early, clear answer.
const PRIVATE_NAME_SUFFIXES = ['local', 'internal', 'home.arpa', 'localdomain'];

// C0 controls, DEL and C1 controls.
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;

function refuse(reason: string): WebhookUrlCheck {
  return { ok: false, reason };
}

/**
 * The registration-time check of a webhook URL. On success `url.href` is the normalized URL: the
 * one called, so the one stored and shown. A host name (not an IP literal) passes: its addresses are checked on every connection.
 */
export function checkWebhookUrl(raw: string, policy: WebhookUrlPolicy): WebhookUrlCheck {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) {
    return refuse(`webhook URLs must be at most ${MAX_WEBHOOK_URL_LENGTH} characters; this one has ${raw.length}`);
  }
  // The URL parser silently drops tabs and line breaks and trims other controls, so the URL
  // called would differ from the one typed: refuse them instead.
  const control = CONTROL_CHARACTER.exec(raw);
  if (control) {
    const code = control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');
    return refuse(`webhook URLs must not contain control characters; found U+${code} at position ${control.index}`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('the webhook URL is not a valid absolute URL; expected something like https://example.com/webhooks');
  }
  if (url.href.length > MAX_WEBHOOK_URL_LENGTH) {
    return refuse(`webhook URLs must be at most ${MAX_WEBHOOK_URL_LENGTH} characters once normalized; this one has ${url.href.length}`);
  }
  if (url.protocol === 'http:' && !policy.allowHttp) {
    return refuse('webhook URLs must use https; http is allowed only when the server sets PETSTORE_WEBHOOK_ALLOW_HTTP=true for development');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return refuse(`webhook URLs must use https, not ${url.protocol.slice(0, -1)}`);
  }
  if (url.username !== '' || url.password !== '') {
    return refuse('webhook URLs must not contain credentials (user:password@); to authenticate deliveries, verify the webhook signature');
  }
  // The fragment never reaches the receiver, so a URL with one is not the URL that gets called.
  if (url.href.includes('#')) {
    return refuse('webhook URLs must not contain a fragment (#…); it is never sent to the receiver, so remove it');
  }
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (net.isIP(host) !== 0) {
    const reason = refusedAddressReason(host, policy.allowed);
    if (reason !== undefined) {
      return refuse(`webhook URLs must point to a public address: ${reason}; use a public host name or address (the server operator can allow a network with ${ENV_NAME})`);
    }
    return { ok: true, url };
  }
  const name = host.replace(/\.+$/, ''); // "localhost." is localhost
  // RFC 6761: localhost names always mean this machine; allowed only when loopback is open.
  const loopbackAllowed = policy.allowed.includes('127.0.0.1') || policy.allowed.includes('::1');
  if ((name === 'localhost' || name.endsWith('.localhost')) && !loopbackAllowed) {
    return refuse(`webhook URLs must point to a public host: ${host} is this server itself; use a public host name`);
  }
  // With allowed networks configured, an internal name may be legitimate; the connection-time
  // check on its addresses decides.
  const suffix = PRIVATE_NAME_SUFFIXES.find((s) => name === s || name.endsWith(`.${s}`));
  if (suffix !== undefined && policy.allowed.entries.length === 0) {
    return refuse(`webhook URLs must point to a public host: .${suffix} names are for private networks; use a public host name`);
  }
  return { ok: true, url };
}
