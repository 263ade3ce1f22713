// #/memory/<id>: one memory — its fields, edit in place, history, links, and the lifecycle
// buttons (forget, restore = undo the last step, purge after an explicit confirmation).

import { h, splitTags } from "../dom.js";
import { t, label, fmtDate } from "../i18n.js";
import { api } from "../api.js";
import { notify, run, field, typeSelect, metaLine, fill, infoOrNull, TYPES } from "../ui.js";

const memUrl = (id) => `/memories/${encodeURIComponent(id)}`;
const memLink = (id) => `#/memory/${encodeURIComponent(id)}`;

/** A field value as display text (lists joined, booleans and dates in words). */
function show(key, value) {
  if (value === null || value === undefined || value === "") return "—";
  if (Array.isArray(value)) return value.join(", ") || "—";
  if (typeof value === "boolean") return value ? t("mem.yes") : t("mem.no");
  if (key.endsWith("_at")) return fmtDate(value);
  if (typeof value === "number") return String(Math.round(value * 1000) / 1000);
  return String(value);
}

function fieldList(mem) {
  const rows = [
    ["mem.id", "id"], ["mem.type", "type"], ["mem.scope", "scope"], ["mem.tags", "tags"],
    ["mem.status", "status"], ["mem.importance", "importance"], ["mem.confidence", "confidence"],
    ["mem.pinned", "pinned"], ["mem.source", "source"], ["mem.session", "source_session"],
    ["mem.created", "created_at"], ["mem.updated", "updated_at"], ["mem.accessed", "last_accessed_at"],
    ["mem.access_count", "access_count"], ["mem.expires", "expires_at"], ["mem.stored", "stored_at"],
  ];
  const items = rows.map(([key, name]) => {
    let value = show(name, mem[name]);
    if (name === "type") value = label("types", mem.type);
    if (name === "status") value = label("status", mem.status);
    return [h("dt", {}, t(key)), h("dd", { dataset: { field: name } }, value)];
  });
  if (mem.superseded_by) {
    items.push([h("dt", {}, t("mem.superseded_by")),
      h("dd", {}, h("a", { href: memLink(mem.superseded_by) }, mem.superseded_by))]);
  }
  return h("dl", { class: "fields" }, items);
}

/** Extra lines for an event: the text before an edit, what a merge brought in, other data. */
function eventDetail(data) {
  if (!data || typeof data !== "object") return [];
  const out = [];
  for (const [key, value] of Object.entries(data)) {
    if (value === null || value === undefined) continue;
    if (key === "before" && typeof value === "object") {
      for (const [k, v] of Object.entries(value)) {
        out.push(h("div", { class: k === "content" ? "before" : "detail" },
          h("span", { class: "k" }, `${t("mem.before")} · ${k}: `), typeof v === "object" ? JSON.stringify(v) : String(v)));
      }
    } else if (key === "merged" && typeof value === "object" && value.content) {
      out.push(h("div", { class: "merged" }, h("span", { class: "k" }, `${t("mem.merged_in")}: `), value.content));
    } else {
      out.push(h("div", { class: "detail" }, h("span", { class: "k" }, `${key}: `),
        typeof value === "object" ? JSON.stringify(value) : String(value)));
    }
  }
  return out;
}

function historyList(events) {
  const list = h("ol", { id: "history", class: "timeline-list" });
  fill(list, events.map((ev) => h("li", { class: `event event-${ev.kind}`, dataset: { kind: ev.kind } },
    h("strong", {}, label("event", ev.kind)), " ", h("time", {}, fmtDate(ev.at)),
    ev.cause ? h("span", { class: "cause" }, ` · ${ev.cause}`) : null,
    eventDetail(ev.data))), t("none"));
  return list;
}

function linkList(links) {
  const list = h("ul", { id: "links", class: "links" });
  fill(list, links.map((link) => h("li", { class: `link link-${link.kind}`, dataset: { id: link.id, kind: link.kind } },
    h("span", { class: "badge" }, `${label("link", link.direction)} ${label("link", link.kind)}`), " ",
    h("a", { href: memLink(link.id) }, link.content || link.id),
    // Type and status come with the link when the server has them at hand.
    [link.type && label("types", link.type), link.status && label("status", link.status)]
      .filter(Boolean).map((text) => h("span", { class: "meta" }, ` · ${text}`)))), t("mem.nolinks"));
  return list;
}

export async function memoryPage(main, { arg: id, signal }) {
  const info = await infoOrNull();
  if (signal.aborted) return;
  const body = h("div", {}, h("p", {}, t("loading")));
  main.append(h("h1", {}, t("mem.title")), body);

  async function load() {
    const data = await api(memUrl(id));
    render(data);
  }

  /** Run a lifecycle call, then reload the page's data and say what happened. */
  const act = (button, call, done) => run(async () => {
    await call();
    await load();
    notify(done);
  }, button);

  function render({ memory: mem, history, links }) {
    const content = h("p", { id: "mem-content", class: "memory-text" }, mem.content);
    const editor = h("form", { id: "editor", class: "stack", hidden: true });
    const purgeBox = h("div", { id: "purge-box", class: "confirm-box", hidden: true },
      h("p", {}, t("mem.purge.ask")),
      h("div", { class: "actions" },
        h("button", { id: "purge-confirm", type: "button", class: "danger", onclick: (e) => purge(e.currentTarget) }, t("mem.purge.confirm")),
        h("button", { id: "purge-cancel", type: "button", onclick: () => { purgeBox.hidden = true; } }, t("cancel"))));

    const buttons = h("div", { class: "actions" },
      h("button", { id: "edit", type: "button", onclick: () => openEditor(editor, mem) }, t("mem.edit")),
      h("button", { id: "pin", type: "button",
        onclick: (e) => act(e.currentTarget, () => api(memUrl(mem.id), { method: "PATCH", body: { pinned: !mem.pinned } }), t("saved")) },
      mem.pinned ? t("mem.unpin") : t("mem.pin")),
      h("button", { id: "forget", type: "button", disabled: mem.status === "deleted",
        onclick: (e) => act(e.currentTarget, () => api(`${memUrl(mem.id)}/forget`, { method: "POST", body: {} }), t("mem.forgotten")) },
      t("mem.forget")),
      h("button", { id: "restore", type: "button",
        onclick: (e) => act(e.currentTarget, () => api(`${memUrl(mem.id)}/restore`, { method: "POST", body: {} }), t("mem.restored")) },
      t("mem.restore")),
      h("button", { id: "purge", type: "button", class: "danger", onclick: () => { purgeBox.hidden = false; } }, t("mem.purge")),
      h("a", { id: "graph-link", class: "button", href: `#/graph/${encodeURIComponent(mem.id)}` }, t("mem.graph")));

    body.replaceChildren(
      h("article", { class: "memory", dataset: { id: mem.id, status: mem.status } }, content, metaLine(mem), buttons, purgeBox, editor),
      fieldList(mem),
      h("h2", {}, t("mem.history")), historyList(history || []),
      h("h2", {}, t("mem.links")), linkList(links || []));
  }

  function openEditor(editor, mem) {
    const content = h("textarea", { id: "edit-content", rows: 6, value: mem.content });
    const type = typeSelect(info?.types?.length ? info.types : TYPES, "—", { id: "edit-type", value: mem.type });
    const tags = h("input", { id: "edit-tags", type: "text", value: (mem.tags || []).join(", ") });
    const importance = h("input", { id: "edit-importance", type: "number", min: 0, max: 1, step: 0.05, value: mem.importance ?? "" });
    const scope = h("input", { id: "edit-scope", type: "text", value: mem.scope || "" });
    const expires = h("input", { id: "edit-expires", type: "text", placeholder: t("mem.expires.placeholder") });
    const save = h("button", { id: "edit-save", type: "submit", class: "primary" }, t("save"));
    editor.replaceChildren(
      field(t("mem.content"), content),
      h("div", { class: "row" }, field(t("mem.type"), type), field(t("mem.scope"), scope)),
      h("div", { class: "row" }, field(t("mem.tags"), tags), field(t("mem.importance"), importance), field(t("mem.expires"), expires)),
      h("div", { class: "actions" }, save,
        h("button", { id: "edit-cancel", type: "button", onclick: () => { editor.hidden = true; } }, t("cancel"))));
    editor.onsubmit = (event) => {
      event.preventDefault();
      // Send only what changed: an unchanged text must not create a new version.
      const changes = {};
      if (content.value.trim() !== mem.content) changes.content = content.value.trim();
      if (type.value && type.value !== mem.type) changes.type = type.value;
      const newTags = splitTags(tags.value);
      if (newTags.join("\u0000") !== (mem.tags || []).join("\u0000")) changes.tags = newTags;
      if (importance.value !== "" && Number(importance.value) !== mem.importance) changes.importance = Number(importance.value);
      if (scope.value.trim() && scope.value.trim() !== mem.scope) changes.scope = scope.value.trim();
      if (expires.value.trim()) changes.expires = expires.value.trim();
      if (!Object.keys(changes).length) {
        editor.hidden = true;
        return;
      }
      act(save, () => api(memUrl(mem.id), { method: "PATCH", body: changes }), t("mem.edited"));
    };
    editor.hidden = false;
    content.focus();
  }

  async function purge(button) {
    await run(async () => {
      await api(memUrl(id), { method: "DELETE" });
      notify(t("mem.purged"));
      body.replaceChildren(h("p", { id: "purged" }, t("mem.purged")));
    }, button);
  }

  await run(load);
}
