// The app shell: hash router, nav state, language switch, service worker registration.

import { applyStatic, getLang, setLang, t } from "./i18n.js";
import { getInfo } from "./api.js";
import { h } from "./dom.js";
import { notify } from "./ui.js";
import { searchPage, addPage } from "./pages/search.js";
import { memoryPage } from "./pages/memory.js";
import { timelinePage } from "./pages/timeline.js";
import { reviewPage } from "./pages/review.js";
import { capturePage } from "./pages/capture.js";
import { ingestPage } from "./pages/ingest.js";
import { graphPage } from "./pages/graph.js";
import { statsPage } from "./pages/stats.js";

const ROUTES = {
  search: searchPage, add: addPage, memory: memoryPage, timeline: timelinePage, review: reviewPage,
  capture: capturePage, ingest: ingestPage, graph: graphPage, stats: statsPage,
};

// Aborted when the page changes, so a page's observers and timers stop with it.
let pageLife = null;

/** "#/memory/mem_1?x=y" → {name: "memory", arg: "mem_1", params: URLSearchParams("x=y")} */
function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const cut = raw.indexOf("?");
  const path = cut < 0 ? raw : raw.slice(0, cut);
  const [name, ...rest] = path.split("/");
  return {
    name: name || "search",
    arg: decodeURIComponent(rest.join("/")),
    params: new URLSearchParams(cut < 0 ? "" : raw.slice(cut + 1)),
  };
}

async function route() {
  pageLife?.abort();
  pageLife = new AbortController();
  const { name, arg, params } = parseHash();
  const page = ROUTES[name];
  const main = h("main", { id: page ? `page-${name}` : "page-notfound" });
  document.getElementById("view").replaceChildren(main);
  for (const link of document.querySelectorAll("nav a[data-route]")) {
    if (link.dataset.route === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (!page) {
    main.append(h("p", {}, t("notfound")));
    return;
  }
  try {
    await page(main, { arg, params, signal: pageLife.signal });
  } catch (err) {
    notify(err.message || String(err), "error");
  }
}

function showScope() {
  getInfo().then((info) => {
    const scope = document.getElementById("scope");
    scope.textContent = info.scope;
    scope.title = info.scope_why || "";
    document.getElementById("readonly").hidden = !info.read_only;
  }).catch(() => { /* the offline or login banner already says why */ });
}

function start() {
  applyStatic();
  document.getElementById("lang").addEventListener("click", () => {
    setLang(getLang() === "zh" ? "en" : "zh");
    route();
  });
  document.getElementById("retry").addEventListener("click", () => {
    showScope();
    route();
  });
  window.addEventListener("hashchange", route);
  showScope();
  route();
  // The worker keeps the shell available when the server is down; it never caches /api/.
  if ("serviceWorker" in navigator) navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(() => {});
}

start();
