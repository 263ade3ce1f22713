// #/search: search as you type with filters, scores and the "why" of each hit.
// #/add: save a new memory and say what became of it (created, merged, superseded…).

import { h, debounce, splitTags } from "../dom.js";
import { t, label } from "../i18n.js";
import { api } from "../api.js";
import { notify, run, field, typeSelect, filterBar, memoryItem, fill, infoOrNull, TYPES } from "../ui.js";

export async function searchPage(main, { params, signal }) {
  const info = await infoOrNull();
  if (signal.aborted) return; // left before /info answered
  const q = h("input", {
    id: "q", type: "search", autocomplete: "off", enterkeyhint: "search",
    placeholder: t("search.placeholder"), value: params.get("q") || "",
  });
  const count = h("p", { class: "count", id: "search-count" });
  const results = h("ul", { id: "results", class: "hits" });
  let latest = 0; // answers to older keystrokes are dropped when they arrive late

  async function search() {
    const text = q.value.trim();
    if (signal.aborted) return; // a late keystroke's timer must not rewrite another page's address
    // Keep the query in the address so a reload or a shared link shows the same results.
    history.replaceState(null, "", text ? `#/search?q=${encodeURIComponent(text)}` : "#/search");
    const mine = ++latest;
    if (!text) {
      count.textContent = "";
      fill(results, [], t("search.hint"));
      return;
    }
    await run(async () => {
      const data = await api("/search", { query: { q: text, k: 20, explain: 1, ...filters.values() } });
      if (mine !== latest) return;
      count.textContent = t("search.count", { n: data.results.length });
      fill(results, data.results.map((mem) => memoryItem(mem, data.terms)), t("search.none"));
    });
  }

  const filters = filterBar(info, ["active", "superseded", "archived", "expired", "all"], search);
  q.addEventListener("input", debounce(search, 200));
  main.append(
    h("h1", {}, t("search.label")),
    h("form", { class: "searchbar", role: "search", onsubmit: (e) => { e.preventDefault(); search(); } },
      h("label", { for: "q", class: "sr-only" }, t("search.label")), q),
    filters.el, count, results);
  q.focus();
  search();
}

export async function addPage(main, { signal }) {
  const info = await infoOrNull();
  if (signal.aborted) return;
  const content = h("textarea", { id: "new-content", rows: 5, required: true });
  const type = typeSelect(info?.types?.length ? info.types : TYPES, t("type.auto"), { id: "new-type" });
  const scopes = h("datalist", { id: "scope-list" }, (info?.scopes || []).map((sc) => h("option", { value: sc })));
  const scope = h("input", { id: "new-scope", type: "text", list: "scope-list", placeholder: info?.scope || t("add.scope.placeholder") });
  const tags = h("input", { id: "new-tags", type: "text", autocomplete: "off" });
  const importance = h("input", { id: "new-importance", type: "number", min: 0, max: 1, step: 0.05 });
  const save = h("button", { id: "new-save", type: "submit", class: "primary" }, t("add.save"));
  const result = h("div", { id: "new-result", "aria-live": "polite" });

  async function submit(event) {
    event.preventDefault();
    const text = content.value.trim();
    if (!text) {
      notify(t("add.empty"), "error");
      return;
    }
    const body = { content: text };
    if (type.value) body.type = type.value;
    if (scope.value.trim()) body.scope = scope.value.trim();
    if (splitTags(tags.value).length) body.tags = splitTags(tags.value);
    if (importance.value !== "") body.importance = Number(importance.value);
    await run(async () => {
      const data = await api("/memories", { method: "POST", body });
      const id = data.memory.id;
      result.replaceChildren(h("p", { class: `action action-${data.action}` },
        h("strong", {}, label("action", data.action)), " · ",
        h("a", { id: "new-link", href: `#/memory/${encodeURIComponent(id)}` }, t("add.view")), " ",
        h("code", {}, id)));
      notify(label("action", data.action));
      content.value = "";
      content.focus();
    }, save);
  }

  main.append(
    h("h1", {}, t("add.title")),
    h("form", { class: "stack", onsubmit: submit },
      field(t("add.content"), content),
      h("div", { class: "row" }, field(t("add.type"), type), field(t("add.scope"), scope), scopes),
      h("div", { class: "row" }, field(t("add.tags"), tags), field(t("add.importance"), importance)),
      h("div", { class: "actions" }, save)),
    result);
  content.focus();
}
