// Service worker: keeps the app shell so the page still opens (with its "server unreachable"
// banner) when `mnemo web` is stopped. API answers hold private data: never cached.

const CACHE = "mnemo-shell-v1";
const SHELL = [
  "/", "/manifest.webmanifest",
  "/static/app.css", "/static/app.js", "/static/api.js", "/static/i18n.js", "/static/dom.js",
  "/static/ui.js", "/static/charts.js",
  "/static/pages/search.js", "/static/pages/memory.js", "/static/pages/timeline.js",
  "/static/pages/review.js", "/static/pages/capture.js", "/static/pages/ingest.js",
  "/static/pages/graph.js", "/static/pages/stats.js",
  "/static/icon.svg", "/static/icon-192.png", "/static/icon-512.png",
];

self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(SHELL)).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil(caches.keys()
    .then((keys) => Promise.all(keys.filter((k) => k !== CACHE).map((k) => caches.delete(k))))
    .then(() => self.clients.claim()));
});

/** Network first (so a running server always serves fresh files), the cached copy when it fails. */
async function fromNetwork(request, cacheKey) {
  try {
    const response = await fetch(request);
    if (response.ok && cacheKey) {
      const cache = await caches.open(CACHE);
      await cache.put(cacheKey, response.clone());
    }
    return response;
  } catch (err) {
    const cached = await caches.match(cacheKey || request);
    if (cached) return cached;
    throw err;
  }
}

self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== "GET" || url.origin !== self.location.origin) return;
  if (url.pathname.startsWith("/api/")) return; // network only: the browser fetches it itself
  if (event.request.mode === "navigate") {
    // Every route is "/" plus a hash; only a plain "/" refreshes the cached shell (a login
    // link's query string must not be stored).
    event.respondWith(fromNetwork(event.request, url.pathname === "/" && !url.search ? "/" : null)
      .catch(() => caches.match("/")));
    return;
  }
  if (SHELL.includes(url.pathname)) event.respondWith(fromNetwork(event.request, url.pathname));
});
