// Every portal page: a Copy button on each code block of a guide (served from this origin: the
// CSP allows no inline script). The clipboard API needs a secure context (https, or 127.0.0.1 and
// localhost); elsewhere the button selects the code and asks the browser to copy the selection.
'use strict';
(function () {
  function selectAndCopy(code) {
    var range = document.createRange();
    range.selectNodeContents(code);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    try {
      return document.execCommand('copy');
    } catch (e) {
      return false;
    }
  }

  function addButton(pre) {
    var code = pre.querySelector('code');
    if (!code) return;
    var language = /(?:^|\s)language-(\S+)/.exec(code.className);
    var bar = document.createElement('div');
    bar.className = 'code-bar';
    var label = document.createElement('span');
    label.className = 'code-language';
    label.textContent = language ? language[1] : '';
    var button = document.createElement('button');
    button.type = 'button';
    button.className = 'copy-button';
    button.textContent = 'Copy';
    var reset;
    function say(text) {
      button.textContent = text;
      clearTimeout(reset);
      reset = setTimeout(function () { button.textContent = 'Copy'; }, 2000);
    }
    button.addEventListener('click', function () {
      var text = code.textContent;
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(function () { say('Copied'); }, function () {
          say(selectAndCopy(code) ? 'Copied' : 'Press Ctrl+C');
        });
      } else {
        say(selectAndCopy(code) ? 'Copied' : 'Press Ctrl+C');
      }
    });
    bar.appendChild(label);
    bar.appendChild(button);
    var block = document.createElement('div');
    block.className = 'code-block';
    pre.parentNode.insertBefore(block, pre);
    block.appendChild(bar);
    block.appendChild(pre);
  }

  Array.prototype.forEach.call(document.querySelectorAll('main.guide pre'), addButton);
})();
