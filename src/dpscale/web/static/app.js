/* dpscale pages: live results, copy, print, reset, feedback.
 * The pages work without this file (a GET form and plain links); it only makes them quicker.
 * No framework, no build step: the server renders every piece of HTML, this swaps them in. */
(function () {
  "use strict";

  var root = document.documentElement;
  root.classList.remove("no-js");
  root.classList.add("js");

  function debounce(fn, ms) {
    var timer = null;
    return function () {
      clearTimeout(timer);
      timer = setTimeout(fn, ms);
    };
  }

  function each(selector, fn, scope) {
    Array.prototype.forEach.call((scope || document).querySelectorAll(selector), fn);
  }

  function say(el, text) {
    if (!el) return;
    el.textContent = text;
  }

  /* Copy text to the clipboard; fall back to selecting a field for older browsers. */
  function copy(text, fallbackField) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    return new Promise(function (resolve, reject) {
      if (!fallbackField) return reject(new Error("no field"));
      fallbackField.focus();
      fallbackField.select();
      (document.execCommand && document.execCommand("copy")) ? resolve() : reject(new Error("copy"));
    });
  }

  /* Links that carry the page's inputs (language switch, full-page link of the embed). */
  function keepQuery(query) {
    each("a[data-keep-query]", function (a) {
      var url = new URL(a.getAttribute("href"), location.href);
      url.search = query ? "?" + query : "";
      a.setAttribute("href", url.toString());
    });
    each("input[data-query]", function (input) {
      input.value = query;
    });
  }

  function sameText(el, html) {
    var parsed = document.createElement("template");
    parsed.innerHTML = html;
    return parsed.content.textContent.trim() === el.textContent.trim();
  }

  function showErrors(form, errors, missing) {
    each("[data-error-for]", function (el) {
      var name = el.getAttribute("data-error-for");
      var empty = missing.indexOf(name) >= 0 ? form.getAttribute("data-msg-missing") : "";
      var message = errors[name] || empty || "";
      var input = form.elements.namedItem(name);
      el.textContent = message;
      var field = el.closest(".field");
      if (field) field.classList.toggle("has-error", Boolean(message));
      if (input) {
        if (message) input.setAttribute("aria-invalid", "true");
        else input.removeAttribute("aria-invalid");
      }
    }, form);
  }

  function setupCalculator(form) {
    var endpoint = form.getAttribute("data-fragment");
    var theme = form.querySelector('input[type="hidden"][name="theme"]');
    var pending = null;
    var count = 0;

    /* ``then`` runs once this update's regions are in: the Calculate button's focus move. */
    function update(then) {
      var params = new URLSearchParams();
      new FormData(form).forEach(function (value, name) {
        params.append(name, String(value).trim());
      });
      if (pending) pending.abort();
      pending = new AbortController();
      var mine = ++count;
      form.setAttribute("aria-busy", "true");
      fetch(endpoint + "?" + params.toString(), {
        signal: pending.signal,
        headers: { Accept: "application/json" },
        credentials: "same-origin"
      })
        .then(function (response) {
          if (!response.ok) throw new Error("HTTP " + response.status);
          return response.json();
        })
        .then(function (data) {
          if (mine !== count) return;
          Object.keys(data.regions).forEach(function (name) {
            each('[data-live="' + name + '"]', function (el) {
              // A status says only what changed: rewritten with the same words, a screen
              // reader would say them again after an edit that changed no result.
              if (el.getAttribute("role") === "status" && sameText(el, data.regions[name])) return;
              el.innerHTML = data.regions[name];
            });
          });
          markScrollBoxes();
          showErrors(form, data.errors, data.missing || []);
          // An embed's theme stays in its own address (a reload had lost it); the links to
          // the full page, which has no theme, take the inputs alone.
          var address = data.query || "";
          if (theme && theme.value) {
            address += (address ? "&" : "") + "theme=" + encodeURIComponent(theme.value);
          }
          history.replaceState(null, "", location.pathname + (address ? "?" + address : ""));
          keepQuery(data.query);
          form.removeAttribute("aria-busy");
          form.setAttribute("data-state", data.valid ? "valid" : "invalid");
          form.setAttribute("data-updates", String(mine));
          if (typeof then === "function") then();
        })
        .catch(function (error) {
          if (error.name !== "AbortError") form.removeAttribute("aria-busy");
        });
    }

    /* A box holding the fresh page's value of an input a preset fills (the worked example's
     * 1.3e9 parameters, the fit's 8 devices per node) is emptied when such a preset is
     * chosen: that value is the page's, and left there it would replace the preset's. This
     * listener runs before the form's, so the update reads the emptied box. */
    each("[data-filled-by]", function (box) {
      var select = form.elements.namedItem(box.getAttribute("data-filled-by"));
      if (!select) return;
      select.addEventListener("change", function () {
        if (select.value && box.value.trim() === box.getAttribute("data-default")) box.value = "";
      });
    }, form);

    var later = debounce(update, 250);
    form.addEventListener("input", later);
    form.addEventListener("change", later);
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      update(function () {
        // The results' region, or its first error: where the answer to the press is.
        var invalid = form.querySelector('[aria-invalid="true"]');
        var results = document.querySelector('[data-live="results"]');
        var target = invalid || results;
        if (!target) return;
        if (target === results) results.setAttribute("tabindex", "-1");
        target.focus();
        target.scrollIntoView({ block: "nearest" });
      });
    });

    each("[data-reset]", function (link) {
      link.addEventListener("click", function (event) {
        event.preventDefault();
        each("input[data-default], select[data-default], textarea[data-default]", function (input) {
          input.value = input.getAttribute("data-default");
        }, form);
        update();
      });
    });
  }

  /* The fit's upload form carries the page's inputs in hidden fields, written when the page
   * was built: they take the calculator form's values as they are now when it is sent. */
  function setupUpload(upload) {
    var form = document.querySelector("form.calc-form");
    if (!form) return;
    upload.addEventListener("submit", function () {
      each('input[type="hidden"]', function (hidden) {
        var input = form.elements.namedItem(hidden.name);
        if (input && "value" in input) hidden.value = input.value;
      }, upload);
    });
  }

  function setupTools() {
    var status = document.querySelector("[data-status]");
    each("[data-copy-link]", function (button) {
      button.addEventListener("click", function () {
        var url = location.href.split("#")[0];
        copy(url, document.querySelector("[data-share-url]")).then(
          function () {
            document.body.setAttribute("data-copied", url);
            say(status, button.getAttribute("data-done"));
          },
          function () {
            say(status, button.getAttribute("data-failed"));
          }
        );
      });
    });
    each("[data-print]", function (button) {
      button.addEventListener("click", function () {
        window.print();
      });
    });
    each("[data-copy-embed]", function (button) {
      button.addEventListener("click", function () {
        var code = document.querySelector("[data-embed-code]");
        var done = document.querySelector("[data-embed-status]");
        if (!code) return;
        copy(code.value, code).then(
          function () {
            document.body.setAttribute("data-copied", code.value);
            say(done, button.getAttribute("data-done"));
          },
          function () {
            say(done, button.getAttribute("data-failed"));
          }
        );
      });
    });
  }

  function setupFeedback(form) {
    var error = form.querySelector("[data-feedback-error]");
    var thanks = document.querySelector("[data-feedback-thanks]");
    var comment = form.querySelector("textarea");
    each('input[name="helpful"]', function (radio) {
      radio.addEventListener("change", function () {
        form.classList.add("chosen");
        if (comment) comment.focus();
      });
    }, form);
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var choice = form.querySelector('input[name="helpful"]:checked');
      if (!choice) {
        say(error, form.getAttribute("data-msg-choose"));
        return;
      }
      var body = {
        calculator: form.getAttribute("data-calculator"),
        lang: form.getAttribute("data-lang"),
        helpful: choice.value === "yes",
        comment: comment ? comment.value : ""
      };
      fetch("/api/v1/feedback", {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        credentials: "same-origin",
        body: JSON.stringify(body)
      })
        .then(function (response) {
          if (response.status !== 201) throw new Error("HTTP " + response.status);
          form.hidden = true;
          if (thanks) {
            thanks.hidden = false;
            thanks.focus();
          }
        })
        .catch(function () {
          say(error, form.getAttribute("data-msg-failed"));
        });
    });
  }

  /* A table or formula wider than its box scrolls sideways; keyboard users reach it with Tab
   * (and scroll it with the arrow keys) only if it is focusable, so only then is it made so,
   * named after its caption: no extra Tab stop where everything fits.
   * A box is measured in a ResizeObserver's callback, which runs after the browser's own
   * layout, so measuring lays nothing out: reading the sizes at start forced the whole page's
   * layout, the article's included (content-visibility: auto), in the load's longest task.
   * Until a box is measured it counts as wide, so Tab never skips it: one in a part of the
   * page that is not drawn yet is measured when that part is. */
  var SCROLL_BOXES = '.table-scroll, .formula-list dd';
  var SCROLL_ATTRIBUTES = ["tabindex", "data-scroll-box", "role", "aria-label"];

  function markScrollBox(box, wide) {
    if (wide && !box.hasAttribute("tabindex")) {
      box.setAttribute("tabindex", "0");
      box.setAttribute("data-scroll-box", "");
      var caption = box.querySelector("caption, figcaption");
      if (caption) {
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", caption.textContent.trim());
      }
    } else if (!wide && box.hasAttribute("data-scroll-box") && box !== document.activeElement) {
      // A box that has the focus keeps its Tab stop: taking it away would drop the focus.
      SCROLL_ATTRIBUTES.forEach(function (name) {
        box.removeAttribute(name);
      });
    }
  }

  var measured = window.ResizeObserver && new ResizeObserver(function (entries) {
    // All sizes first, then the attributes: no write comes between two reads.
    var wide = entries.map(function (entry) {
      return entry.target.scrollWidth > entry.target.clientWidth + 1;
    });
    entries.forEach(function (entry, i) {
      markScrollBox(entry.target, wide[i]);
    });
  });
  var watched = measured ? new WeakSet() : null;

  /* At start and after each live update (new tables): observing a box again
   * measures it again once the browser has laid it out. */
  function markScrollBoxes() {
    each(SCROLL_BOXES, function (box) {
      if (!measured || !watched.has(box)) markScrollBox(box, true);
      if (measured) {
        watched.add(box);
        measured.unobserve(box);
        measured.observe(box);
      }
    });
  }

  /* An embed tells its host page how tall it is (the pasted snippet's script, or our own
   * page's preview, sets the iframe to it): no inner scroll bar, no results cut off. */
  var HEIGHT = "dpscale:height";

  function reportHeight() {
    if (window.parent === window || !document.body.classList.contains("embed")) return;
    var last = 0;
    function send() {
      var height = Math.ceil(document.body.getBoundingClientRect().height);
      if (height === last) return;
      last = height;
      window.parent.postMessage({ type: HEIGHT, height: height }, "*");
    }
    send();
    if (window.ResizeObserver) new ResizeObserver(send).observe(document.body);
  }

  function followPreviewHeight() {
    window.addEventListener("message", function (event) {
      var data = event.data;
      if (event.origin !== location.origin || !data || data.type !== HEIGHT) return;
      each("iframe[data-embed-preview]", function (frame) {
        if (frame.contentWindow === event.source) frame.style.height = Math.ceil(data.height) + "px";
      });
    });
  }

  function start() {
    markScrollBoxes();
    reportHeight();
    followPreviewHeight();
    each("form[data-calculator]", setupCalculator);
    each("form[data-feedback]", setupFeedback);
    each("form.upload-form", setupUpload);
    setupTools();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
