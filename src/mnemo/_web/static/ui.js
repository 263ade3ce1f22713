// Widgets shared by several pages: the status toast, async button handling, filters and
// the way one memory is listed.

import { h, highlight, debounce } from "./dom.js";
import { t, label, fmtDate } from "./i18n.js";
import { getInfo } from "./api.js";

export const TYPES = ["user_preference", "project_context", "decision", "constraint", "goal",
  "feedback", "fact", "entity", "workflow", "note"];

let toastTimer;

/** Show a message in the shell's aria-live status area; errors stay longer. */
export function notify(message, kind = "info") {
  const box = document.getElementById("status");
  box.textContent = message;
  box.className = `toast ${kind}`;
  box.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { box.hidden = true; }, kind === "error" ? 12000 : 5000);
}

/** Run an async action; its failure becomes an error toast instead of an uncaught rejection.
 *  The button (if given) is disabled meanwhile so a double click can't send twice. */
export async function run(action, button) {
  if (button) button.disabled = true;
  try {
    return await action();
  } catch (err) {
    notify(err.message || String(err), "error");
    return undefined;
  } finally {
    if (button) button.disabled = false;
  }
}

/** The server's /info, or null when it can't be had (the banners say why); pages then use defaults. */
export function infoOrNull() {
  return getInfo().catch(() => null);
}

/** A labelled form control: <label><span>text</span>control</label>. */
export function field(text, control) {
  return h("label", { class: "field" }, h("span", {}, text), control);
}

/** <select> of memory types; `emptyText` names the "no type" choice. */
export function typeSelect(types, emptyText, attrs = {}) {
  return h("select", attrs, h("option", { value: "" }, emptyText),
    types.map((type) => h("option", { value: type }, label("types", type))));
}

/**
 * The filter bar of the search and timeline pages. `statuses` lists the status choices
 * (the first is the default); onChange runs after any change (typing debounced).
 */
export function filterBar(info, statuses, onChange) {
  const types = info?.types?.length ? info.types : TYPES;
  const type = typeSelect(types, t("type.any"), { id: "f-type" });
  const scope = h("select", { id: "f-scope" },
    h("option", { value: "" }, t("f.scope.default")),
    h("option", { value: "all" }, t("f.scope.all")),
    (info?.scopes || []).map((sc) => h("option", { value: sc }, sc)));
  const tag = h("input", { id: "f-tag", type: "text", autocomplete: "off" });
  const since = h("input", { id: "f-since", type: "date" });
  const until = h("input", { id: "f-until", type: "date" });
  const status = h("select", { id: "f-status" }, statuses.map((st) => h("option", { value: st }, label("status", st))));
  const el = h("details", { class: "filters" }, h("summary", {}, t("f.legend")),
    h("div", { class: "filter-grid" },
      field(t("f.type"), type), field(t("f.scope"), scope), field(t("f.tag"), tag),
      field(t("f.since"), since), field(t("f.until"), until), field(t("f.status"), status)));
  for (const control of [type, scope, since, until, status]) control.addEventListener("change", onChange);
  tag.addEventListener("input", debounce(onChange, 300));
  const values = () => ({
    type: type.value, scope: scope.value, tag: tag.value.trim(),
    since: since.value, until: until.value, status: status.value,
  });
  return { el, values };
}

/** Small "type · scope · date · tags" line for a memory. */
export function metaLine(mem) {
  const tags = mem.tags || [];
  return h("p", { class: "meta" },
    h("span", { class: `badge type-${mem.type}` }, label("types", mem.type)),
    mem.status && mem.status !== "active" ? h("span", { class: `badge status-${mem.status}` }, label("status", mem.status)) : null,
    h("span", { class: "scope" }, mem.scope || ""),
    h("time", { datetime: mem.created_at || mem.created || "" }, fmtDate(mem.created_at || mem.created)),
    tags.map((tag) => h("span", { class: "tag" }, `#${tag}`)));
}

/** The "why" of a search hit: every explain factor, numbers to three places. */
function whyBox(explain) {
  const rows = Object.entries(explain).map(([key, value]) => [
    h("dt", {}, label("explain", key)),
    h("dd", {}, typeof value === "number" ? value.toFixed(3) : String(value)),
  ]);
  return h("details", { class: "why" }, h("summary", {}, t("search.why")), h("dl", {}, rows));
}

/** One memory in a list: li.hit[data-id] linking to its page, matched terms marked. */
export function memoryItem(mem, terms) {
  return h("li", { class: "hit", dataset: { id: mem.id } },
    h("a", { class: "content", href: `#/memory/${encodeURIComponent(mem.id)}` }, highlight(mem.content || "", terms)),
    metaLine(mem),
    typeof mem.score === "number" ? h("p", { class: "score" }, `${t("search.score")} ${mem.score.toFixed(3)}`) : null,
    mem.explain ? whyBox(mem.explain) : null);
}

/** Replace a container's children with a "nothing here" line when the list is empty. */
export function fill(container, items, emptyText) {
  const tag = /^(UL|OL)$/.test(container.tagName) ? "li" : "p";
  container.replaceChildren(...(items.length ? items : [h(tag, { class: "empty" }, emptyText)]));
}
