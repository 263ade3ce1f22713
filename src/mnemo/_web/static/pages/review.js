// #/review: what needs a person — memories past expiry, possible conflicts, and this
// week's automatic changes with an Undo for each.

import { h } from "../dom.js";
import { t, label, fmtDate } from "../i18n.js";
import { api } from "../api.js";
import { notify, run, metaLine, fill } from "../ui.js";

const memUrl = (id) => `/memories/${encodeURIComponent(id)}`;
const memLink = (mem) => h("a", { href: `#/memory/${encodeURIComponent(mem.id)}` }, mem.content);

export async function reviewPage(main) {
  const due = h("ul", { id: "review-due", class: "hits" });
  const conflicts = h("ul", { id: "review-conflicts", class: "hits" });
  const changes = h("ul", { id: "review-changes", class: "hits" });
  main.append(
    h("h1", {}, t("nav.review")),
    h("section", {}, h("h2", {}, t("review.due")), due),
    h("section", {}, h("h2", {}, t("review.conflicts")), conflicts),
    h("section", {}, h("h2", {}, t("review.changes")), changes));

  /** A button that posts to one memory's lifecycle endpoint, then reloads everything. */
  const post = (cls, text, id, action, body, done) => h("button", {
    type: "button", class: cls,
    onclick: (e) => run(async () => {
      await api(`${memUrl(id)}/${action}`, { method: "POST", body });
      notify(done);
      await load();
    }, e.currentTarget),
  }, text);

  function dueItem(mem) {
    return h("li", { class: "due", dataset: { id: mem.id } }, memLink(mem), metaLine(mem),
      mem.expires_at ? h("p", { class: "meta" }, `${t("mem.expires")}: ${fmtDate(mem.expires_at)}`) : null,
      h("div", { class: "actions" },
        post("confirm", t("review.confirm"), mem.id, "confirm", {}, t("review.confirmed")),
        post("forget", t("mem.forget"), mem.id, "forget", {}, t("mem.forgotten"))));
  }

  function conflictItem(c) {
    return h("li", { class: "conflict", dataset: { new: c.new.id, old: c.old.id } },
      h("div", { class: "pair" },
        h("div", {}, h("span", { class: "badge" }, t("review.new")), " ", memLink(c.new), metaLine(c.new)),
        h("div", {}, h("span", { class: "badge" }, t("review.old")), " ", memLink(c.old), metaLine(c.old))),
      c.why ? h("p", { class: "why-text" }, c.why) : null,
      h("div", { class: "actions" },
        post("keep-both", t("review.keep"), c.new.id, "resolve", { supersede: false }, t("review.resolved")),
        post("supersede", t("review.replace"), c.new.id, "resolve", { supersede: true }, t("review.resolved"))));
  }

  function changeItem(ch) {
    return h("li", { class: `change change-${ch.kind}`, dataset: { id: ch.memory_id, kind: ch.kind } },
      h("p", {}, h("strong", {}, label("event", ch.kind)), " ", h("time", {}, fmtDate(ch.at)),
        ch.cause ? h("span", { class: "cause" }, ` · ${ch.cause}`) : null),
      ch.memory ? [memLink({ ...ch.memory, id: ch.memory_id }), metaLine(ch.memory)] : h("p", { class: "meta" }, t("review.gone")),
      ch.undo ? h("div", { class: "actions" }, post("undo", t("review.undo"), ch.memory_id, "restore", {}, t("review.undone"))) : null);
  }

  async function load() {
    const [review, changed] = await Promise.all([api("/review"), api("/changes", { query: { days: 7, limit: 100 } })]);
    fill(due, review.results.map(dueItem), t("review.due.none"));
    fill(conflicts, review.possible_conflicts.map(conflictItem), t("review.conflicts.none"));
    fill(changes, changed.results.map(changeItem), t("review.changes.none"));
  }

  await run(load);
}
