/* Welcomemat snippet (docs/renderer.md: "The snippet"). Hides only [data-wm-zone] elements, for at most
 * the budget; writes text with textContent; sets only https, allowlisted links; beacons. */
(function () {
  "use strict";
  var DEFAULT_BUDGET_MS = 800;
  var MAX_BUDGET_MS = 2000;
  var ZONE = "[data-wm-zone]";
  var script = document.currentScript;
  var root = document.documentElement;
  var hidden = [];
  var done = false;
  var payload = null;
  var timer = null;

  function hide() {
    var found = document.querySelectorAll(ZONE);
    for (var i = 0; i < found.length; i++) {
      var el = found[i];
      if (hidden.indexOf(el) < 0) {
        hidden.push(el);
        hidden.push(el.style.visibility);
        el.style.visibility = "hidden";
      }
    }
  }

  function finish(state) {
    if (done) return;
    done = true;
    if (timer !== null) clearTimeout(timer);
    for (var i = 0; i < hidden.length; i += 2) hidden[i].style.visibility = hidden[i + 1];
    hidden = [];
    root.dataset.wmSnippet = state;
  }

  function allowedLink(href, links) {
    var url;
    try {
      url = new URL(href);
    } catch (e) {
      return false;
    }
    return (
      url.protocol === "https:" && !url.username && !url.password && !url.port && links.indexOf(url.hostname) >= 0
    );
  }

  function randomId() {
    var c = window.crypto;
    if (c && c.randomUUID) return c.randomUUID();
    var bytes = new Uint8Array(16);
    c.getRandomValues(bytes);
    var out = "";
    for (var i = 0; i < bytes.length; i++) out += (bytes[i] + 256).toString(16).slice(1);
    return out;
  }

  function beacon(origin, campaign, view, type, zone) {
    if (!view || !navigator.sendBeacon) return;
    try {
      var body = { campaign: campaign, view: view, event_id: randomId(), type: type };
      if (zone) body.zone = zone;
      navigator.sendBeacon(origin + "/v1/events", new Blob([JSON.stringify(body)], { type: "text/plain" }));
    } catch (e) {
      /* a beacon is best effort */
    }
  }

  function apply(origin, campaign) {
    var zones = payload && payload.zones;
    var links = payload && Array.isArray(payload.links) ? payload.links : [];
    var own = Object.prototype.hasOwnProperty;
    var swapped = [];
    if (!zones || typeof zones !== "object") return finish("default");
    var found = document.querySelectorAll(ZONE);
    for (var i = 0; i < found.length; i++) {
      var el = found[i];
      var id = el.getAttribute("data-wm-zone");
      var zone = own.call(zones, id) ? zones[id] : null;
      if (!zone || typeof zone.text !== "string") continue;
      if (zone.href !== undefined) {
        // Text and link belong together: a link that fails the check leaves the zone as it was.
        if (typeof zone.href !== "string" || !allowedLink(zone.href, links)) continue;
        if (el.tagName === "A") el.href = zone.href;
      }
      el.textContent = zone.text;
      el.dataset.wmRung = String(zone.rung);
      swapped.push(el);
    }
    // A zone the answer leaves out keeps the site's own copy; the visit still counts.
    finish(swapped.length ? "swapped" : "default");
    if (!found.length) return;
    var view = typeof payload.view === "string" ? payload.view : null;
    beacon(origin, campaign, view, "view");
    document.addEventListener(
      "click",
      function (event) {
        var target = event.target;
        var el = target && target.closest ? target.closest(ZONE) : null;
        if (el && Array.prototype.indexOf.call(found, el) >= 0) {
          beacon(origin, campaign, view, "click", el.getAttribute("data-wm-zone"));
        }
      },
      true
    );
  }

  function start() {
    var campaign = script && script.getAttribute("data-wm-campaign");
    if (!campaign || !window.fetch || !window.URL) return finish("default");
    var origin = new URL(script.src).origin;
    var budget = parseInt(script.getAttribute("data-wm-budget"), 10);
    if (!(budget >= 0)) budget = DEFAULT_BUDGET_MS;
    budget = Math.min(budget, MAX_BUDGET_MS);
    var domReady = document.readyState !== "loading";
    var ready = function () {
      if (!done && payload && domReady) apply(origin, campaign);
    };
    hide();
    if (!domReady) {
      document.addEventListener("DOMContentLoaded", function () {
        domReady = true;
        if (!done) hide();
        ready();
      });
    }
    timer = setTimeout(function () {
      finish("default");
    }, budget);
    var url = origin + "/v1/zones?campaign=" + encodeURIComponent(campaign);
    var wm = new URLSearchParams(location.search).get("wm");
    if (wm) url += "&wm=" + encodeURIComponent(wm);
    fetch(url, { credentials: "omit", mode: "cors" })
      .then(function (response) {
        return response.ok ? response.json() : null;
      })
      .then(function (data) {
        if (!data) return finish("default");
        payload = data;
        ready();
      })
      .catch(function () {
        finish("default");
      });
  }

  try {
    start();
  } catch (e) {
    finish("default");
  }
})();
