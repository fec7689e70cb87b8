/* medcite viewer: PMID chips open the cited abstract in the side panel; tables filter as you type.
   Only DOM APIs that treat run content as text or clone server-escaped nodes are used (no innerHTML). */
(function () {
  "use strict";

  function tokens(value) {
    return (value || "").split(/\s+/).filter(Boolean);
  }

  /* ---------- citation panel (topic page) ---------- */
  var panel = document.getElementById("panel");

  function showAbstract(pmid, evidence, chip) {
    if (!panel) return false;
    var inner = panel.querySelector(".panel-inner");
    var source = document.getElementById("pmid-" + pmid);
    while (inner.firstChild) inner.removeChild(inner.firstChild);
    if (!source) {
      var p = document.createElement("p");
      p.className = "panel-hint";
      p.textContent = "PMID " + pmid + " is cited but its abstract is not in articles.jsonl.";
      inner.appendChild(p);
    } else {
      var copy = source.cloneNode(true);
      copy.removeAttribute("id");
      copy.classList.add("in-panel");
      var wanted = tokens(evidence);
      copy.querySelectorAll("mark.ev").forEach(function (m) {
        var hit = wanted.length === 0 || tokens(m.getAttribute("data-evidence")).some(function (i) {
          return wanted.indexOf(i) >= 0;
        });
        m.classList.toggle("active", hit);
      });
      inner.appendChild(copy);
    }
    document.querySelectorAll(".chip.selected").forEach(function (c) { c.classList.remove("selected"); });
    if (chip) chip.classList.add("selected");
    panel.classList.add("open");
    if (window.innerWidth < 1000) panel.scrollIntoView({ behavior: "smooth", block: "start" });
    return true;
  }

  document.addEventListener("click", function (ev) {
    var chip = ev.target.closest ? ev.target.closest("a.chip[data-pmid]") : null;
    if (!chip || !panel) return;
    var href = chip.getAttribute("href") || "";
    if (href.charAt(0) !== "#") return;
    ev.preventDefault();
    var pmid = chip.getAttribute("data-pmid");
    showAbstract(pmid, chip.getAttribute("data-evidence"), chip);
    if (window.history && history.replaceState) history.replaceState(null, "", "#pmid-" + pmid);
  });

  if (panel && location.hash.indexOf("#pmid-") === 0) {
    try {
      showAbstract(decodeURIComponent(location.hash.slice(6)), "", null);
    } catch (e) { /* a malformed anchor: leave the panel empty */ }
  }

  /* ---------- study-design filter (topic page): dims the other chips, hides the other abstracts ---------- */
  var designSelect = document.getElementById("design-filter");
  if (designSelect) {
    var applyDesign = function (updateUrl) {
      var want = designSelect.value, shown = 0, total = 0;
      document.querySelectorAll("#answer a.chip[data-pmid]").forEach(function (c) {
        var ok = !want || tokens(c.getAttribute("data-designs")).indexOf(want) >= 0;
        c.classList.toggle("design-out", !ok);
      });
      document.querySelectorAll("#abstracts article.abstract").forEach(function (a) {
        var ok = !want || tokens(a.getAttribute("data-designs")).indexOf(want) >= 0;
        a.hidden = !ok;
        total += 1;
        if (ok) shown += 1;
      });
      var count = document.getElementById("design-count");
      if (count) count.textContent = want ? shown + " of " + total + " sources" : "";
      if (updateUrl && window.history && history.replaceState) {
        var params = new URLSearchParams(location.search);
        if (want) params.set("design", want); else params.delete("design");
        var qs = params.toString();
        history.replaceState(null, "", location.pathname + (qs ? "?" + qs : "") + location.hash);
      }
    };
    var asked = new URLSearchParams(location.search).get("design");
    if (asked && designSelect.querySelector("option[value='" + asked.replace(/[^a-z-]/g, "") + "']")) {
      designSelect.value = asked;
    }
    designSelect.addEventListener("change", function () { applyDesign(true); });
    applyDesign(false);
  }

  /* ---------- table filters (run list, topic list, comparison) ---------- */
  document.querySelectorAll(".filters[data-filter-table]").forEach(function (bar) {
    var table = document.getElementById(bar.getAttribute("data-filter-table"));
    if (!table) return;
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var count = bar.querySelector(".count");
    var fields = bar.querySelectorAll("input, select");

    function apply(updateUrl) {
      var params = new URLSearchParams(location.search);
      var q = "", want = {}, shown = 0;
      fields.forEach(function (f) {
        var value = f.type === "checkbox" ? (f.checked ? f.value : "") : f.value.trim();
        if (f.name === "q") q = value.toLowerCase(); else if (value) want[f.name] = value;
        if (value) params.set(f.name, value); else params.delete(f.name);
      });
      rows.forEach(function (tr) {
        var ok = !q || (tr.getAttribute("data-search") || "").indexOf(q) >= 0;
        if (ok && want.preset) ok = tr.getAttribute("data-preset") === want.preset;
        if (ok && want.status) ok = tr.getAttribute("data-status") === want.status;
        if (ok && want.dropped) ok = tr.getAttribute("data-dropped") === "1";
        tr.hidden = !ok;
        if (ok) shown += 1;
      });
      if (count) count.textContent = shown + " of " + rows.length + " shown";
      if (updateUrl && window.history && history.replaceState) {
        var qs = params.toString();
        history.replaceState(null, "", location.pathname + (qs ? "?" + qs : "") + location.hash);
      }
    }
    fields.forEach(function (f) {
      f.addEventListener(f.tagName === "SELECT" || f.type === "checkbox" ? "change" : "input", function () {
        apply(true);
      });
    });
    apply(false);
  });
})();
