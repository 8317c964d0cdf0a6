// The interactive reference on /docs: Swagger UI over this server's /v1/openapi.json, with two
// small plugins for the document's extensions. Served from this origin (no inline script: CSP).
'use strict';
(function () {
  var origin = window.location.origin;
  var root = document.getElementById('swagger-ui');

  // `x-hideTryItPanel: true` on an operation: Swagger UI asks this selector before it offers
  // "Try it out", so such an operation is shown without any send control.
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

  function fail(message) {
    root.textContent = '';
    var p = document.createElement('p');
    p.className = 'reference-loading';
    p.textContent = message;
    root.appendChild(p);
  }

  fetch('/v1/openapi.json', { credentials: 'omit' })
    .then(function (res) {
      if (!res.ok) throw new Error('GET /v1/openapi.json answered ' + res.status);
      return res.json();
    })
    .then(function (spec) {
      // Try it sends to the server that serves this page, whatever servers the document lists.
      spec.servers = [{ url: origin + '/v1', description: 'this server' }];
      root.textContent = '';
      window.ui = SwaggerUIBundle({
        spec: spec,
        domNode: root,
        presets: [SwaggerUIBundle.presets.apis],
        plugins: [HideTryItPanelPlugin, BadgesPlugin],
        layout: 'BaseLayout',
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
    })
    .catch(function (err) {
      fail('The reference could not load the API document: ' + err.message + '. It is at /v1/openapi.json.');
    });
})();
