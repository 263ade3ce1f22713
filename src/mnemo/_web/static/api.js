// The one way pages talk to the server. A network failure raises the offline banner, a 401
// the login notice; any other error carries the server's one-line message for the page to show.

import { t } from "./i18n.js";

export class ApiError extends Error {
  constructor(status, type, message) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

function toggle(id, show) {
  const el = document.getElementById(id);
  if (el) el.hidden = !show;
}

/** "/search", {q: "x", k: 10} → "/api/v1/search?q=x&k=10", leaving out empty values. */
function apiUrl(path, query) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") params.set(key, String(value));
  }
  const qs = params.toString();
  return `/api/v1${path}${qs ? `?${qs}` : ""}`;
}

/**
 * Call the API. `body` is sent as JSON unless it is a Blob/File (sent as raw bytes, for ingest).
 * Resolves to the parsed JSON; rejects with an ApiError whose message is fit to show.
 */
export async function api(path, { method = "GET", query, body } = {}) {
  const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
  if (body instanceof Blob) {
    init.body = body;
    init.headers["Content-Type"] = "application/octet-stream";
  } else if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  let res;
  try {
    res = await fetch(apiUrl(path, query), init);
  } catch {
    toggle("offline-banner", true);
    throw new ApiError(0, "NetworkError", t("offline"));
  }
  toggle("offline-banner", false);
  toggle("login-needed", res.status === 401);
  let data = null;
  try {
    data = await res.json();
  } catch { /* an empty or non-JSON body: the status alone tells */ }
  if (res.status === 401) throw new ApiError(401, "Unauthorized", t("login"));
  if (!res.ok) {
    const err = data && data.error;
    throw new ApiError(res.status, err?.type || "HTTPError", err?.message || `${res.status} ${res.statusText}`);
  }
  return data;
}

let infoPromise = null;

/** The server's /info (scopes, types, read-only flag), fetched once and shared by every page. */
export function getInfo() {
  if (!infoPromise) {
    infoPromise = api("/info").catch((err) => {
      infoPromise = null; // try again on the next page
      throw err;
    });
  }
  return infoPromise;
}
