// The interactive reference on /docs: one Swagger UI for each API section of the page (the
// Petstore's /v1/openapi.json, then the example API's /example/v1/openapi.json), with small
// plugins for the documents' extensions and one key shared by both. Served from this origin
// (no inline script: CSP).
'use strict';
(function () {
  var origin = window.location.origin;
  var sections = Array.prototype.slice.call(document.querySelectorAll('section.reference-api[data-document]'));

  // `x-hideTryItPanel: true` on an operation: Swagger UI asks this selector before it offers
  // "Try it out", so such an operation is shown without any send control; where the button
  // would be, a note says why and what to do instead.
  function HideTryItPanelPlugin() {
    return {
      statePlugins: {
        spec: {
          selectors: {
            allowTryItOutFor: function (state, path, method) {
              return state.getIn(['json', 'paths', path, method, 'x-hideTryItPanel']) !== true;
            },
          },
        },
      },
      wrapComponents: {
        parameters: function (Original, system) {
          var h = system.React.createElement;
          return function (props) {
            var pathMethod = props.pathMethod || [];
            var hidden = system.specSelectors.specJson().getIn(['paths', pathMethod[0], pathMethod[1], 'x-hideTryItPanel']) === true;
            if (!hidden) return h(Original, props);
            return h(
              system.React.Fragment,
              null,
              h(
                'p',
                { className: 'portal-no-try-it-note' },
                'This operation cannot be sent from this page (its document marks it ',
                h('code', null, 'x-hideTryItPanel'),
                '). Send it from a terminal instead, with your key in ',
                h('code', null, 'Authorization: Bearer …'),
                ', as the ',
                h('a', { href: '/docs/quickstart' }, 'Quickstart'),
                ' does.',
              ),
              h(Original, props),
            );
          };
        },
      },
    };
  }

  // "5 December 2030" from an ISO instant; the value as given when it does not parse.
  function day(value) {
    var ms = Date.parse(value);
    if (isNaN(ms)) return String(value);
    return new Date(ms).toLocaleDateString('en-GB', { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' });
  }

  function successorId(value) {
    if (typeof value === 'string') return value;
    return value && typeof value.operationId === 'string' ? value.operationId : '';
  }

  // Badges after the path in each operation's summary line: `x-stability` (experimental, beta),
  // no try-it (`x-hideTryItPanel`), and for deprecated operations their removal date
  // (`x-sunset`) and successor (`x-successor`).
  function badgesFor(op) {
    var badges = [];
    var stability = op.get('x-stability');
    if (typeof stability === 'string' && stability) {
      badges.push({ kind: 'stability portal-badge-stability-' + stability.replace(/[^a-z-]/gi, ''), text: stability, title: 'x-stability: ' + stability + ' (may change without a deprecation period)' });
    }
    if (op.get('x-hideTryItPanel') === true) {
      badges.push({ kind: 'no-try-it', text: 'Not sendable from this page', title: 'x-hideTryItPanel: this operation has no "Try it out"' });
    }
    if (op.get('deprecated') === true) {
      var sunset = op.get('x-sunset');
      var successor = op.get('x-successor');
      var successorValue = successor && successor.toJS ? successor.toJS() : successor;
      badges.push({ kind: 'deprecated', text: sunset ? 'Deprecated: removed on ' + day(sunset) : 'Deprecated', title: 'See /docs/deprecations' });
      var id = successorId(successorValue);
      if (id) badges.push({ kind: 'successor', text: 'Use ' + id + ' instead', title: 'Successor operation: ' + id });
    }
    return badges;
  }

  function BadgesPlugin() {
    return {
      wrapComponents: {
        OperationSummaryPath: function (Original, system) {
          var h = system.React.createElement;
          return function (props) {
            // The document as served: the operation in props is resolved only once it is expanded.
            var op = system.specSelectors.specJson().getIn(['paths', props.operationProps.get('path'), props.operationProps.get('method')]);
            var badges = op ? badgesFor(op) : [];
            return h(
              system.React.Fragment,
              null,
              h(Original, props),
              badges.length === 0
                ? null
                : h('span', { className: 'portal-badges' }, badges.map(function (b, i) {
                    return h('span', { key: i, className: 'portal-badge portal-badge-' + b.kind, title: b.title }, b.text);
                  })),
            );
          };
        },
      },
    };
  }

  // The key is entered once: authorizing (or logging out) in one API's dialog does the same in
  // the others, which use the same bearer scheme. Each instance's key stays in its memory.
  var systems = [];
  var sharing = false;
  function SharedKeyPlugin(index) {
    function share(action, payload) {
      if (sharing) return;
      sharing = true;
      try {
        systems.forEach(function (other, i) {
          if (other && i !== index) other.authActions[action](payload);
        });
      } finally {
        sharing = false;
      }
    }
    function wrap(action) {
      return function (original) {
        return function (payload) {
          var result = original(payload);
          share(action, payload);
          return result;
        };
      };
    }
    return function () {
      return { statePlugins: { auth: { wrapActions: { authorize: wrap('authorize'), logout: wrap('logout') } } } };
    };
  }

  function fail(section, message) {
    section.textContent = '';
    var p = document.createElement('p');
    p.className = 'reference-loading';
    p.textContent = message;
    section.appendChild(p);
  }

  function load(section) {
    var url = section.getAttribute('data-document');
    return fetch(url, { credentials: 'omit' })
      .then(function (res) {
        if (!res.ok) throw new Error('GET ' + url + ' answered ' + res.status);
        return res.json();
      })
      .catch(function (err) {
        fail(section, 'The reference could not load the API document: ' + err.message + '. It is at ' + url + '.');
        return null;
      });
  }

  function render(section, spec, index) {
    // Try it sends to the server that serves this page, whatever servers the document lists.
    spec.servers = [{ url: origin + section.getAttribute('data-server'), description: 'this server' }];
    section.textContent = '';
    var root = document.createElement('div');
    section.appendChild(root);
    systems[index] = SwaggerUIBundle({
      spec: spec,
      domNode: root,
      presets: [SwaggerUIBundle.presets.apis],
      plugins: [HideTryItPanelPlugin, BadgesPlugin, SharedKeyPlugin(index)],
      layout: 'BaseLayout',
      // Both instances read the #/tag/operationId hash; tags differ between the documents.
      deepLinking: true,
      displayOperationId: true,
      displayRequestDuration: true,
      showExtensions: true,
      showCommonExtensions: true,
      defaultModelsExpandDepth: 1,
      docExpansion: 'list',
      // The key lives in this page's memory only: not in localStorage, a cookie or the URL.
      persistAuthorization: false,
      withCredentials: false,
      // No badge from validator.swagger.io, no configuration from the query string.
      validatorUrl: null,
      queryConfigEnabled: false,
      requestInterceptor: function (request) {
        if (new URL(request.url, window.location.href).origin !== origin) {
          throw new Error('The reference sends requests only to ' + origin);
        }
        return request;
      },
    });
  }

  // Every document first, then the instances in page order: a key entered at once reaches all.
  Promise.all(sections.map(load)).then(function (specs) {
    specs.forEach(function (spec, i) {
      if (spec) render(sections[i], spec, i);
    });
  });
})();
