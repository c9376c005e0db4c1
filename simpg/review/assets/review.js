/* simpg review report: clusters, differences against the representative, decisions.
 *
 * Everything shown from the data goes through textContent or createTextNode, never
 * innerHTML: a document's text is shown as text, whatever it holds. Only one page of
 * clusters is in the DOM at a time, and a difference is computed when asked for, so a
 * report of 10,000 clusters opens as fast as one of ten.
 */
(function () {
  "use strict";

  var PAGE_SIZE = 50;
  var DIFF_TIMEOUT_MS = 3000;
  var CONTEXT = 160;  // characters kept on each side of a long unchanged run
  // scripts written without spaces between words (and Hangul): compared by characters
  var SPACELESS = /[\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]/;

  var data = JSON.parse(document.getElementById("simpg-data").textContent);
  var docs = data.documents;
  var clusters = data.clusters;
  var storageKey = "simpg-decisions:" + data.collection;

  var state = { matches: [], page: 0, selected: 0, expanded: {} };
  var lowered = {};  // document id -> [source, title + text] lowercased, made when first searched
  // "a:b" -> {a, b, verdict, source_a, source_b}; stale: those of an earlier report of the collection
  // whose documents are not this report's (a new dedup run gives new ids): kept, never exported
  var stale = {};
  var decisions = loadDecisions();
  var recorded = {};  // "a:b" -> {a, b, verdict, who, at}: decisions stored before this report
  data.decisions.forEach(function (d) { recorded[pairKey(d.a, d.b)] = d; });

  var linksOf = {};  // cluster index -> links touching it
  data.links.forEach(function (link) {
    [link.cluster_a, link.cluster_b].forEach(function (c) {
      if (c !== null) { (linksOf[c] = linksOf[c] || []).push(link); }
    });
  });

  function $(id) { return document.getElementById(id); }

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      if (key === "text") { node.textContent = attrs[key]; } else { node.setAttribute(key, attrs[key]); }
    });
    (children || []).forEach(function (child) {
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  function pairKey(a, b) { return Math.min(a, b) + ":" + Math.max(a, b); }

  function fmt(value) { return value === null || value === undefined ? "" : String(value); }

  function fmtShare(value) { return value === null || value === undefined ? "" : value.toFixed(3); }

  // ---- decisions, kept in the page (localStorage, by collection) ----

  function loadDecisions() {
    try {
      var saved = JSON.parse(window.localStorage.getItem(storageKey) || "{}");
      var out = {};
      Object.keys(saved && typeof saved === "object" ? saved : {}).forEach(function (key) {
        var d = saved[key];
        var here = d && docs[d.a] && docs[d.b] && docs[d.a].source === d.source_a && docs[d.b].source === d.source_b;
        if (here) { out[key] = d; } else { stale[key] = d; }
      });
      return out;
    } catch (err) {
      return {};
    }
  }

  function saveDecisions() {
    try {
      window.localStorage.setItem(storageKey, JSON.stringify(Object.assign({}, stale, decisions)));
    } catch (err) { /* storage off: the decisions live as long as the page */ }
    var staleCount = Object.keys(stale).length;
    $("decision-count").textContent = Object.keys(decisions).length + " decisions" +
      (staleCount ? " (" + staleCount + " of an earlier report, for other documents, not exported)" : "");
  }

  function decide(a, b, verdict) {
    var key = pairKey(a, b);
    if (decisions[key] && decisions[key].verdict === verdict) {
      delete decisions[key];  // pressed again: undone
    } else {
      var lo = Math.min(a, b), hi = Math.max(a, b);
      decisions[key] = { a: lo, b: hi, verdict: verdict, source_a: docs[lo].source, source_b: docs[hi].source };
    }
    saveDecisions();
  }

  function exportDecisions() {
    var list = Object.keys(decisions).map(function (key) { return decisions[key]; });
    list.sort(function (x, y) { return x.a - y.a || x.b - y.b; });
    var out = {
      format: "simpg-decisions", version: 1, collection: data.collection,
      decisions: list.map(function (d) {
        return { a: d.a, b: d.b, verdict: d.verdict, source_a: d.source_a, source_b: d.source_b };
      })
    };
    var blob = new Blob([JSON.stringify(out, null, 2) + "\n"], { type: "application/json" });
    var link = el("a", { href: URL.createObjectURL(blob), download: "simpg-decisions.json" });
    document.body.appendChild(link);
    link.click();
    link.remove();
  }

  function verdictButtons(a, b) {
    var cell = el("td", { "class": "verdicts" });
    var buttons = [["not_duplicate", "not a duplicate"], ["duplicate", "duplicate"]].map(function (v) {
      return el("button", { type: "button", "class": "verdict " + v[0], "data-a": a, "data-b": b,
                            "data-verdict": v[0], "aria-pressed": "false", text: v[1] });
    });
    buttons.forEach(function (button) { cell.appendChild(button); });
    var old = recorded[pairKey(a, b)];
    if (old) {
      cell.appendChild(el("div", { "class": "recorded", text: "recorded: " + old.verdict.replace("_", " ") +
        (old.who ? " by " + old.who : "") + (old.at ? ", " + old.at : "") }));
    }
    showVerdict(cell, a, b);
    return cell;
  }

  function showVerdict(cell, a, b) {
    var mine = decisions[pairKey(a, b)];
    cell.querySelectorAll("button.verdict").forEach(function (button) {
      button.setAttribute("aria-pressed", String(!!mine && mine.verdict === button.getAttribute("data-verdict")));
    });
  }

  // ---- differences, computed when asked for ----

  function appendText(target, text, collapse) {
    if (!collapse || text.length <= 3 * CONTEXT) { target.appendChild(document.createTextNode(text)); return; }
    target.appendChild(document.createTextNode(text.slice(0, CONTEXT)));
    var hidden = text.slice(CONTEXT, text.length - CONTEXT);
    var skip = el("span", { "class": "skip", title: "show", text: " \u2026 " + hidden.length + " characters alike \u2026 " });
    skip.addEventListener("click", function () { skip.replaceWith(document.createTextNode(hidden)); });
    target.appendChild(skip);
    target.appendChild(document.createTextNode(text.slice(text.length - CONTEXT)));
  }

  function renderDiff(target, oldText, newText) {
    var byChars = SPACELESS.test(oldText) || SPACELESS.test(newText);
    var parts = (byChars ? Diff.diffChars : Diff.diffWords)(oldText, newText, { timeout: DIFF_TIMEOUT_MS });
    target.textContent = "";
    target.setAttribute("data-mode", byChars ? "chars" : "words");
    if (!parts) {
      target.textContent = "too different to compare within " + DIFF_TIMEOUT_MS / 1000 + " s";
      return;
    }
    parts.forEach(function (part) {
      if (part.added) { target.appendChild(el("ins", { text: part.value })); }
      else if (part.removed) { target.appendChild(el("del", { text: part.value })); }
      else { appendText(target, part.value, true); }
    });
  }

  function toggleDiff(row, a, b, button) {
    var next = row.nextSibling;
    if (next && next.classList.contains("diff-row")) {
      next.remove();
      button.setAttribute("aria-expanded", "false");
      return;
    }
    var box = el("div", { "class": "diff", "data-a": a, "data-b": b });
    renderDiff(box, docs[a].text, docs[b].text);
    var cell = el("td", { colspan: "9" }, [
      el("div", { "class": "recorded", text: "changes from " + docs[a].source + " (struck out, red) to " +
                                             docs[b].source + " (green)" }), box]);
    row.after(el("tr", { "class": "diff-row" }, [cell]));
    button.setAttribute("aria-expanded", "true");
  }

  function toggleText(row, id, button) {
    var next = row.nextSibling;
    if (next && next.classList.contains("text-row")) { next.remove(); return; }
    row.after(el("tr", { "class": "text-row" }, [el("td", { colspan: "9" }, [
      el("div", { "class": "text", text: docs[id].text })])]));
    button.setAttribute("aria-expanded", "true");
  }

  // ---- clusters ----

  function headRow() {
    return el("tr", {}, ["id", "source", "title", "bits", "sketch bits", "sketch similarity", "est. Jaccard", "",
                         "decision"].map(function (name) { return el("th", { text: name }); }));
  }

  function figureCells(f) {
    return [el("td", { "class": "num", text: fmt(f.distance) }), el("td", { "class": "num", text: fmt(f.sketch_distance) }),
            el("td", { "class": "num", text: fmtShare(f.sketch_similarity) }),
            el("td", { "class": "num", text: fmtShare(f.estimated_jaccard) })];
  }

  function clusterBody(index) {
    var cluster = clusters[index];
    var rep = cluster.representative;
    var table = el("table", {}, [headRow()]);
    var textButton = el("button", { type: "button", "class": "show-text", text: "text" });
    var repRow = el("tr", { "class": "representative", "data-id": rep }, [
      el("td", { "class": "num", text: String(rep) }), el("td", { "class": "source", text: docs[rep].source }),
      el("td", { text: fmt(docs[rep].title) }), el("td", { colspan: "4", text: "representative" }),
      el("td", {}, [textButton]), el("td", {})]);
    textButton.addEventListener("click", function () { toggleText(repRow, rep, textButton); });
    table.appendChild(repRow);
    cluster.members.forEach(function (member) {
      var id = member.id;
      var diffButton = el("button", { type: "button", "class": "show-diff", "aria-expanded": "false",
                                      text: "differences" });
      var row = el("tr", { "class": "member", "data-id": id }, [
        el("td", { "class": "num", text: String(id) }), el("td", { "class": "source", text: docs[id].source }),
        el("td", { text: fmt(docs[id].title) })].concat(figureCells(member), [el("td", {}, [diffButton]),
        verdictButtons(rep, id)]));
      diffButton.addEventListener("click", function () { toggleDiff(row, rep, id, diffButton); });
      table.appendChild(row);
    });
    var body = el("div", { "class": "body" }, [table]);
    var links = linksOf[index] || [];
    if (links.length) {
      var linkTable = el("table", {}, [el("tr", {}, ["this cluster", "near-duplicate elsewhere", "cluster", "bits",
        "sketch bits", "sketch similarity", "est. Jaccard", "", "decision"].map(function (name) {
        return el("th", { text: name });
      }))]);
      links.forEach(function (link) {
        var here = link.cluster_a === index ? link.a : link.b;
        var there = here === link.a ? link.b : link.a;
        var other = here === link.a ? link.cluster_b : link.cluster_a;
        var diffButton = el("button", { type: "button", "class": "show-diff", text: "differences" });
        var row = el("tr", { "class": "link", "data-a": link.a, "data-b": link.b }, [
          el("td", { "class": "source", text: docs[here].source }), el("td", { "class": "source", text: docs[there].source }),
          el("td", { text: other === null ? "none" : "#" + (other + 1) })].concat(figureCells(link),
          [el("td", {}, [diffButton]), verdictButtons(link.a, link.b)]));
        diffButton.addEventListener("click", function () { toggleDiff(row, here, there, diffButton); });
        linkTable.appendChild(row);
      });
      body.appendChild(el("div", { "class": "links" }, [
        el("h3", { text: "Near-duplicates in other clusters (" + links.length + ")" }), linkTable]));
    }
    return body;
  }

  function clusterNode(index, position) {
    var cluster = clusters[index];
    var rep = docs[cluster.representative];
    var size = cluster.members.length + 1;
    var linkCount = (linksOf[index] || []).length;
    var head = el("h2", { "aria-expanded": String(!!state.expanded[index]) }, [
      el("span", { "class": "number", text: "#" + (index + 1) }),
      el("span", { "class": "size", text: size + " documents" + (linkCount ? ", " + linkCount + " links" : "") }),
      el("span", { "class": "source", text: rep.source + (rep.title ? " \u2014 " + rep.title : "") })]);
    var node = el("section", { "class": "cluster" + (position === state.selected ? " selected" : ""),
                               "data-index": index, "data-position": position }, [head]);
    head.addEventListener("click", function () { select(position); toggle(index); });
    if (state.expanded[index]) { node.appendChild(clusterBody(index)); }
    return node;
  }

  function render() {
    var main = $("clusters");
    var pages = Math.max(1, Math.ceil(state.matches.length / PAGE_SIZE));
    state.page = Math.min(state.page, pages - 1);
    var start = state.page * PAGE_SIZE;
    var end = Math.min(start + PAGE_SIZE, state.matches.length);
    main.textContent = "";
    for (var p = start; p < end; p++) { main.appendChild(clusterNode(state.matches[p], p)); }
    if (!state.matches.length) {
      main.appendChild(el("p", { "class": "empty", text: clusters.length ? "no cluster matches" : "no near-duplicates" }));
    }
    $("shown").textContent = state.matches.length ? "clusters " + (start + 1) + "\u2013" + end + " of " +
      state.matches.length + (state.matches.length < clusters.length ? " (of " + clusters.length + ")" : "") : "";
    $("prev").disabled = state.page === 0;
    $("next").disabled = state.page >= pages - 1;
  }

  function toggle(index) {
    if (state.expanded[index]) { delete state.expanded[index]; } else { state.expanded[index] = true; }
    var node = document.querySelector('.cluster[data-index="' + index + '"]');
    if (node) {  // only this cluster is redrawn: the others keep their open differences
      node.replaceWith(clusterNode(index, Number(node.getAttribute("data-position"))));
    } else {
      render();
    }
    scrollToSelected();
  }

  function select(position) {
    if (!state.matches.length) { return; }
    state.selected = Math.max(0, Math.min(position, state.matches.length - 1));
    var page = Math.floor(state.selected / PAGE_SIZE);
    if (page !== state.page) {
      state.page = page;
      render();
    } else {
      document.querySelectorAll(".cluster.selected").forEach(function (node) { node.classList.remove("selected"); });
      var node = document.querySelector('.cluster[data-position="' + state.selected + '"]');
      if (node) { node.classList.add("selected"); }
    }
    scrollToSelected();
  }

  function scrollToSelected() {
    var node = document.querySelector(".cluster.selected");
    if (node) { node.scrollIntoView({ block: "nearest" }); }
  }

  // ---- search ----

  function docMatches(id, query, scope) {
    var low = lowered[id];
    if (!low) { low = lowered[id] = [docs[id].source.toLowerCase(), (fmt(docs[id].title) + "\n" + docs[id].text).toLowerCase()]; }
    return (scope !== "text" && low[0].indexOf(query) >= 0) || (scope !== "source" && low[1].indexOf(query) >= 0);
  }

  function filter() {
    var query = $("search").value.trim().toLowerCase();
    var scope = $("scope").value;
    state.matches = [];
    for (var i = 0; i < clusters.length; i++) {
      var c = clusters[i];
      var hit = !query || docMatches(c.representative, query, scope) ||
        c.members.some(function (m) { return docMatches(m.id, query, scope); });
      if (hit) { state.matches.push(i); }
    }
    state.page = 0;
    state.selected = 0;
    render();
  }

  // ---- wiring ----

  var pending = null;
  $("search").addEventListener("input", function () {
    clearTimeout(pending);
    pending = setTimeout(filter, 120);
  });
  $("scope").addEventListener("change", filter);
  $("prev").addEventListener("click", function () { select((state.page - 1) * PAGE_SIZE); });
  $("next").addEventListener("click", function () { select((state.page + 1) * PAGE_SIZE); });
  $("export").addEventListener("click", exportDecisions);
  $("clusters").addEventListener("click", function (event) {
    var button = event.target.closest("button.verdict");
    if (!button) { return; }
    decide(Number(button.getAttribute("data-a")), Number(button.getAttribute("data-b")),
           button.getAttribute("data-verdict"));
    showVerdict(button.parentNode, Number(button.getAttribute("data-a")), Number(button.getAttribute("data-b")));
  });
  document.addEventListener("keydown", function (event) {
    var tag = event.target.tagName;
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") {
      if (event.key === "Escape" || event.key === "Enter") { event.target.blur(); }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (event.key === "/") { event.preventDefault(); $("search").focus(); }
    else if (event.key === "j" || event.key === "ArrowDown") { event.preventDefault(); select(state.selected + 1); }
    else if (event.key === "k" || event.key === "ArrowUp") { event.preventDefault(); select(state.selected - 1); }
    else if (event.key === "Enter" && tag !== "BUTTON" && state.matches.length) {
      event.preventDefault();
      toggle(state.matches[state.selected]);
    }
  });

  // ---- copied passages (simpg dedup --passages): each pair's shared passages highlighted in both texts ----

  // Offsets in the data count code points (Python's str); the DOM counts UTF-16 units.
  function utf16Index(text) {
    if (!/[\ud800-\udfff]/.test(text)) { return function (i) { return i; }; }
    var at = [0];
    for (var i = 0; i < text.length; i++) {
      var code = text.charCodeAt(i);
      if (code >= 0xd800 && code < 0xdc00 && i + 1 < text.length) { i++; }
      at.push(i + 1);
    }
    return function (n) { return at[Math.min(n, at.length - 1)]; };
  }

  // The text with each range [start, end) (code points) in a <mark>; overlapping ranges merged.
  function highlighted(text, ranges) {
    var sorted = ranges.slice().sort(function (x, y) { return x[0] - y[0] || x[1] - y[1]; });
    var merged = [];
    sorted.forEach(function (r) {
      var last = merged[merged.length - 1];
      if (last && r[0] <= last[1]) { last[1] = Math.max(last[1], r[1]); } else { merged.push([r[0], r[1]]); }
    });
    var at = utf16Index(text);
    var box = el("div", { "class": "text copied" });
    var done = 0;
    merged.forEach(function (r) {
      var s = at(r[0]), e = at(r[1]);
      if (s > done) { box.appendChild(document.createTextNode(text.slice(done, s))); }
      box.appendChild(el("mark", { "data-start": r[0], "data-end": r[1], text: text.slice(s, e) }));
      done = e;
    });
    if (done < text.length) { box.appendChild(document.createTextNode(text.slice(done))); }
    return box;
  }

  function pct(x) { return Math.round(100 * x) + "%"; }

  function copyPair(p) {
    var side = p.copy === p.a ? "a" : "b";
    var node = el("div", { "class": "copy-pair", "data-a": p.a, "data-b": p.b }, [
      el("p", { text: p.copy + " " + docs[p.copy].source + " copied from " + p.source + " " + docs[p.source].source +
        ": " + pct(p.copy_in_source) + " of the copy is in the source, " + pct(p.source_in_copy) +
        " of the source is in the copy; " + p.passage_count + " passages, " + p.shared_tokens +
        " tokens shared, longest " + p.longest })]);
    var panes = el("div", { "class": "panes" });
    [[p.source, p.source === p.a ? "a" : "b"], [p.copy, side]].forEach(function (doc) {
      var ranges = p.passages.map(function (q) { return [q[doc[1] + "_start"], q[doc[1] + "_end"]]; });
      var pane = highlighted(docs[doc[0]].text, ranges);
      pane.setAttribute("data-id", doc[0]);
      pane.setAttribute("data-side", doc[1]);
      panes.appendChild(el("div", {}, [el("div", { "class": "recorded", text: (doc[0] === p.source ? "source " :
        "copy ") + doc[0] + ": " + docs[doc[0]].source }), pane]));
    });
    node.appendChild(panes);
    return node;
  }

  function renderPassages() {
    var report = data.passages;
    var section = $("passages");
    if (!report) { return; }
    section.hidden = false;
    var pairs = report.pairs;
    var rule = report.min_tokens !== null ? "a passage of " + report.min_tokens + " tokens or more" : "";
    if (report.min_containment !== null) { rule += (rule ? " or " : "") + pct(report.min_containment) + " of either"; }
    var shown = pairs.length - report.near_duplicate_pairs;
    section.appendChild(el("h2", { text: "Copied passages" }));
    section.appendChild(el("p", { "class": "settings", text: shown + " pairs share " + rule + " (" + report.candidates +
      " candidates verified on the texts), in " + report.clusters.length + " clusters of \u201ccopied from\u201d; " +
      report.near_duplicate_pairs + " pairs of whole-document near-duplicates left out (clusters above); " +
      report.common_hashes.length + " common hashes skipped" }));
    if (!report.clusters.length) { section.appendChild(el("p", { "class": "empty", text: "no copied passages" })); }
    report.clusters.forEach(function (cluster, index) {
      var head = el("h3", { tabindex: "0", "aria-expanded": "false" }, [
        el("span", { "class": "number", text: "#" + (index + 1) + " " }),
        el("span", { text: cluster.members.length + " documents, source " + cluster.sources.map(function (s) {
          return s + " " + docs[s].source; }).join(", ") })]);
      var node = el("section", { "class": "copy-cluster", "data-index": index }, [head]);
      function toggleCopies() {
        var open = head.getAttribute("aria-expanded") === "true";
        head.setAttribute("aria-expanded", String(!open));
        if (open) { node.querySelectorAll(".copy-pair").forEach(function (n) { n.remove(); }); return; }
        cluster.pairs.forEach(function (n) { node.appendChild(copyPair(pairs[n])); });
        document.querySelectorAll(".copy-cluster.selected").forEach(function (n) { n.classList.remove("selected"); });
        node.classList.add("selected");
      }
      head.addEventListener("click", toggleCopies);
      head.addEventListener("keydown", function (event) {
        if (event.key === "Enter") { event.preventDefault(); event.stopPropagation(); toggleCopies(); }
      });
      section.appendChild(node);
    });
  }

  saveDecisions();
  filter();
  renderPassages();
}());
