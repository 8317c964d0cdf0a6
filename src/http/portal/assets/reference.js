// The interactive reference on /docs: one Swagger UI for each API section of the page (the
// Petstore's /v1/openapi.json, then the example API's /example/v1/openapi.json), with small
// plugins for the documents' extensions and one key shared by both. Served from this origin
// (no inline script: CSP).
'use strict';
(function () {
  var origin = window.location.origin;
  // Read before Swagger UI starts: its deep linking rewrites any hash to #/….
  var initialHash = window.location.hash;
  var sections = Array.prototype.slice.call(document.querySelectorAll('section.reference-api[data-document]'));

  // `x-hideTryItPanel: true` on an operation: Swagger UI asks this selector before it offers
  // "Try it out", so such an operation is shown without any send control; where the button
  // would be, a note says why and what to do instead.
  function HideTryItPanelPlugin(groups) {
    return function () {
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
            var group = groupOf(groups, pathMethod[1], pathMethod[0]);
            var guide = group ? group.guide : '/docs/quickstart';
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
                h('a', { href: guide }, group ? group.name + ' guide' : 'Quickstart'),
                ' does.',
              ),
              h(Original, props),
            );
          };
        },
      },
    };
    };
  }

  // The resource of an operation (groups from the page: reference-page.ts decides them).
  function groupOf(groups, method, path) {
    var key = String(method).toLowerCase() + ' ' + path;
    for (var i = 0; i < groups.length; i++) if (groups[i].operations.indexOf(key) >= 0) return groups[i];
    return null;
  }

  // The document has one tag (the spec requires it): inside it, one section per resource with its
  // heading and a link to its guide. Operations keep their tag, so their ids and deep links
  // (#/animals/getPet) are unchanged. The page's webhook events go after the operations.
  function ResourcesPlugin(groups, after) {
    return function (system) {
      var h = system.React.createElement;
      return {
        wrapComponents: {
          OperationTag: function (Original) {
            return function (props) {
              if (groups.length === 0) return h(Original, props);
              var sections = groups.map(function (group) { return { group: group, items: [] }; });
              var rest = [];
              // Swagger UI passes the tag's operations inside one div.operation-tag-content.
              var content = system.React.Children.toArray(props.children);
              var wrapper = content.length === 1 && content[0].props && content[0].props.className === 'operation-tag-content' ? content[0] : null;
              if (wrapper) content = system.React.Children.toArray(wrapper.props.children);
              content.forEach(function (child) {
                var group = child && child.props ? groupOf(groups, child.props.method, child.props.path) : null;
                if (group) sections[groups.indexOf(group)].items.push(child);
                else rest.push(child);
              });
              var children = sections.filter(function (s) { return s.items.length > 0; }).map(function (s) {
                return h(
                  'section',
                  { key: s.group.id, id: 'resource-' + s.group.id, className: 'portal-resource', 'aria-labelledby': 'resource-' + s.group.id + '-title' },
                  h('h4', { id: 'resource-' + s.group.id + '-title', className: 'portal-resource-title' }, s.group.name,
                    h('a', { href: s.group.guide, className: 'portal-resource-guide' }, 'Guide')),
                  s.items,
                );
              });
              return h(Original, props, h('div', { className: 'operation-tag-content' }, children.concat(rest)));
            };
          },
          operations: function (Original) {
            return function (props) {
              if (!after) return h(Original, props);
              // A node rendered by the server, moved here once: React renders no children into this div.
              return h(system.React.Fragment, null, h(Original, props), h('div', {
                className: 'portal-after-operations',
                ref: function (el) { if (el && after.parentNode !== el) el.appendChild(after); },
              }));
            };
          },
        },
      };
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
    var groups = JSON.parse(section.getAttribute('data-groups') || '[]');
    var after = section.nextElementSibling && section.nextElementSibling.classList.contains('webhook-events') ? section.nextElementSibling : null;
    // Try it sends to the server that serves this page, whatever servers the document lists.
    spec.servers = [{ url: origin + section.getAttribute('data-server'), description: 'this server' }];
    section.textContent = '';
    var root = document.createElement('div');
    section.appendChild(root);
    systems[index] = SwaggerUIBundle({
      spec: spec,
      domNode: root,
      presets: [SwaggerUIBundle.presets.apis],
      plugins: [HideTryItPanelPlugin(groups), BadgesPlugin, SharedKeyPlugin(index), ResourcesPlugin(groups, after)],
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
    // A link to a resource or an event kind (#resource-orders, #webhook-events): its target exists
    // only now, so the browser could not scroll to it on load. Swagger UI handles #/tag/operationId.
    var hash = initialHash;
    if (!/^#[a-z]/.test(hash)) return;
    var tries = 0;
    (function scroll() {
      var target = document.getElementById(decodeURIComponent(hash.slice(1)));
      var rendered = sections.every(function (section) { return section.querySelector('.opblock') !== null; });
      if ((!target || !rendered) && ++tries < 100) return setTimeout(scroll, 50);
      if (window.location.hash !== hash) window.history.replaceState(null, '', hash);
      if (target) target.scrollIntoView();
    })();
  });
})();
