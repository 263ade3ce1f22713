// Every UI string, in English and Chinese. Pages call t("key"); memory text is never translated.

const STRINGS = {
  en: {
    "app.title": "mnemo",
    "nav.skip": "Skip to content", "nav.search": "Search", "nav.add": "Add", "nav.timeline": "Timeline", "nav.review": "Review",
    "nav.capture": "Capture", "nav.ingest": "Ingest", "nav.stats": "Stats",
    "nav.scope": "Scope", "nav.readonly": "read-only", "nav.lang": "中文", "nav.lang_label": "切换到中文",
    "offline": "Server unreachable — is `mnemo web` running?",
    "login": "Not logged in: open the link that `mnemo web` printed.",
    "retry": "Retry", "loading": "Loading…", "error": "Error", "saved": "Saved", "done": "Done",
    "notfound": "Page not found.", "none": "Nothing here.", "more": "Load more", "end": "No more.",
    "cancel": "Cancel", "save": "Save", "open": "Open",
    "type.any": "Any type", "type.auto": "Detect automatically",
    "types": {
      user_preference: "Preference", project_context: "Project", decision: "Decision", constraint: "Constraint",
      goal: "Goal", feedback: "Feedback", fact: "Fact", entity: "Entity", workflow: "Workflow", note: "Note",
    },
    "status": { active: "active", superseded: "superseded", deleted: "forgotten", archived: "archived", expired: "expired", all: "all" },
    "f.legend": "Filters", "f.type": "Type", "f.scope": "Scope", "f.scope.default": "This scope + global",
    "f.scope.all": "All scopes", "f.tag": "Tag", "f.since": "Since", "f.until": "Until", "f.status": "Status",
    "search.label": "Search memories", "search.placeholder": "Ask in any language…",
    "search.hint": "Type to search by meaning and by words, in Chinese or English.",
    "search.none": "No relevant memories.", "search.count": "{n} results",
    "search.score": "score", "search.why": "Why this result",
    "explain": {
      similarity: "cosine similarity", baseline: "cosine baseline", bm25: "BM25", dense_relevance: "semantic relevance", lexical_relevance: "word relevance",
      relevance: "relevance", importance_factor: "× importance", confidence_factor: "× confidence",
      recency_factor: "× recency", access_factor: "× access", time_factor: "× time", stale_factor: "× staleness",
      type_factor: "× type", scope_factor: "× scope", score: "= score",
      context_of: "next to the hit", context_share: "share of its score", own_score: "its own score",
    },
    "add.title": "Add a memory", "add.content": "What should be remembered?", "add.type": "Type",
    "add.scope": "Scope", "add.scope.placeholder": "default scope", "add.tags": "Tags (comma separated)",
    "add.importance": "Importance (0–1, optional)", "add.save": "Save memory", "add.empty": "Write something first.",
    "action": { created: "Created", merged: "Merged into an existing memory", superseded: "Saved; it replaces an older memory",
      duplicate: "Already remembered", updated: "Updated", skipped: "Skipped" },
    "add.view": "Open the memory",
    "mem.title": "Memory", "mem.content": "Content", "mem.id": "ID", "mem.type": "Type", "mem.scope": "Scope",
    "mem.tags": "Tags", "mem.importance": "Importance", "mem.confidence": "Confidence", "mem.status": "Status",
    "mem.source": "Source", "mem.session": "Session", "mem.created": "Created", "mem.updated": "Updated",
    "mem.accessed": "Last used", "mem.access_count": "Times used", "mem.expires": "Expires",
    "mem.superseded_by": "Replaced by", "mem.pinned": "Pinned", "mem.stored": "Stored",
    "mem.yes": "yes", "mem.no": "no",
    "mem.edit": "Edit", "mem.forget": "Forget", "mem.restore": "Restore (undo last step)", "mem.purge": "Delete for good",
    "mem.pin": "Pin", "mem.unpin": "Unpin", "mem.graph": "Show graph",
    "mem.purge.ask": "Delete this memory for good? Its text leaves every index and the history. This cannot be undone.",
    "mem.purge.confirm": "Yes, delete for good", "mem.purged": "Deleted for good.",
    "mem.forgotten": "Forgotten. Restore brings it back.", "mem.restored": "Restored.", "mem.edited": "Saved; the old version is in the history.",
    "mem.history": "History", "mem.links": "Links", "mem.nolinks": "No links.", "mem.before": "Before",
    "mem.merged_in": "Merged in", "mem.expires.placeholder": "e.g. 30d or 2027-01-31",
    "link": { related: "related", supersedes: "replaces", superseded_by: "replaced by", derived_from: "derived from",
      merged: "merged", in: "←", out: "→" },
    "event": { created: "created", updated: "edited", merged: "merged", superseded: "superseded", archived: "archived",
      deleted: "forgotten", restored: "restored", reverted: "edit undone", unmerged: "merge undone", confirmed: "renewed",
      resolved: "resolved", possible_conflict: "possible conflict", purged: "deleted for good" },
    "timeline.title": "Timeline",
    "review.due": "Expired or due for review", "review.due.none": "Nothing is due.",
    "review.confirm": "Still true — renew", "review.conflicts": "Possible conflicts", "review.conflicts.none": "No conflicts.",
    "review.new": "New", "review.old": "Old", "review.keep": "Keep both", "review.replace": "New replaces old",
    "review.changes": "What changed this week", "review.changes.none": "No changes this week.",
    "review.undo": "Undo", "review.undone": "Undone.", "review.resolved": "Resolved.", "review.confirmed": "Renewed.",
    "review.gone": "(memory no longer exists)",
    "capture.title": "Capture from a conversation", "capture.text": "Paste a message or a conversation",
    "capture.preview": "Preview", "capture.none": "Nothing worth remembering was found.",
    "capture.save": "Save selected", "capture.saved": "Saved {n}:", "capture.confidence": "confidence",
    "capture.nothing": "Tick at least one item.",
    "ingest.title": "Ingest documents", "ingest.drop": "Drop Markdown, text or chat-export files here, or choose them:",
    "ingest.file": "Files", "ingest.scope": "Scope", "ingest.tags": "Tags (comma separated)",
    "ingest.uploading": "Uploading {name}…", "ingest.result": "{name}: {ingested} ingested, {chunks} chunks",
    "ingest.skipped": "skipped {path}: {reason}", "ingest.sources": "Sources", "ingest.nosources": "Nothing ingested yet.",
    "ingest.resync": "Re-ingest", "ingest.remove": "Remove", "ingest.remove.confirm": "Confirm remove",
    "ingest.chunks": "{n} chunks", "ingest.removed": "Removed.", "ingest.resynced": "Re-ingested.",
    "graph.title": "Graph", "graph.depth": "Depth", "graph.memory": "Open the memory", "graph.nodes": "Nodes",
    "graph.center": "centre",
    "stats.title": "Statistics", "stats.total": "Memories", "stats.last7": "Added in the last 7 days",
    "stats.size": "Store size", "stats.vectors": "Vectors", "stats.model": "Model",
    "stats.llm_calls": "LLM calls today", "stats.llm_tokens": "LLM tokens today",
    "stats.weekly": "Memories created per week, by type", "stats.by_scope": "Memories by scope",
    "stats.by_type": "Memories by type", "stats.injections": "Context injections per week", "stats.by_status": "By status",
  },
  zh: {
    "app.title": "mnemo",
    "nav.skip": "跳到内容", "nav.search": "搜索", "nav.add": "添加", "nav.timeline": "时间线", "nav.review": "审阅",
    "nav.capture": "捕获", "nav.ingest": "导入", "nav.stats": "统计",
    "nav.scope": "范围", "nav.readonly": "只读", "nav.lang": "English", "nav.lang_label": "Switch to English",
    "offline": "无法连接服务器 —— `mnemo web` 是否在运行？",
    "login": "未登录：请打开 `mnemo web` 打印的链接。",
    "retry": "重试", "loading": "加载中…", "error": "错误", "saved": "已保存", "done": "完成",
    "notfound": "页面不存在。", "none": "暂无内容。", "more": "加载更多", "end": "没有更多了。",
    "cancel": "取消", "save": "保存", "open": "打开",
    "type.any": "所有类型", "type.auto": "自动识别",
    "types": {
      user_preference: "偏好", project_context: "项目", decision: "决定", constraint: "约束",
      goal: "目标", feedback: "反馈", fact: "事实", entity: "实体", workflow: "流程", note: "笔记",
    },
    "status": { active: "有效", superseded: "已被取代", deleted: "已遗忘", archived: "已归档", expired: "已过期", all: "全部" },
    "f.legend": "筛选", "f.type": "类型", "f.scope": "范围", "f.scope.default": "当前范围 + 全局",
    "f.scope.all": "所有范围", "f.tag": "标签", "f.since": "起始", "f.until": "截止", "f.status": "状态",
    "search.label": "搜索记忆", "search.placeholder": "用任何语言提问…",
    "search.hint": "输入即可按语义和关键词搜索，中英文皆可。",
    "search.none": "没有相关记忆。", "search.count": "{n} 条结果",
    "search.score": "得分", "search.why": "为什么是这条",
    "explain": {
      similarity: "余弦相似度", baseline: "相似度基线", bm25: "BM25", dense_relevance: "语义相关度", lexical_relevance: "词语相关度",
      relevance: "相关度", importance_factor: "× 重要性", confidence_factor: "× 置信度",
      recency_factor: "× 新近度", access_factor: "× 使用频率", time_factor: "× 时间", stale_factor: "× 陈旧度",
      type_factor: "× 类型", scope_factor: "× 范围", score: "= 得分",
      context_of: "紧挨着的命中", context_share: "分得的比例", own_score: "自身得分",
    },
    "add.title": "添加记忆", "add.content": "要记住什么？", "add.type": "类型",
    "add.scope": "范围", "add.scope.placeholder": "默认范围", "add.tags": "标签（逗号分隔）",
    "add.importance": "重要性（0–1，可选）", "add.save": "保存记忆", "add.empty": "请先写点内容。",
    "action": { created: "已创建", merged: "已合并到已有记忆", superseded: "已保存，并取代了一条旧记忆",
      duplicate: "已经记住了", updated: "已更新", skipped: "已跳过" },
    "add.view": "查看这条记忆",
    "mem.title": "记忆", "mem.content": "内容", "mem.id": "ID", "mem.type": "类型", "mem.scope": "范围",
    "mem.tags": "标签", "mem.importance": "重要性", "mem.confidence": "置信度", "mem.status": "状态",
    "mem.source": "来源", "mem.session": "会话", "mem.created": "创建于", "mem.updated": "更新于",
    "mem.accessed": "最近使用", "mem.access_count": "使用次数", "mem.expires": "到期",
    "mem.superseded_by": "被取代为", "mem.pinned": "置顶", "mem.stored": "存储于",
    "mem.yes": "是", "mem.no": "否",
    "mem.edit": "编辑", "mem.forget": "遗忘", "mem.restore": "恢复（撤销上一步）", "mem.purge": "彻底删除",
    "mem.pin": "置顶", "mem.unpin": "取消置顶", "mem.graph": "查看关系图",
    "mem.purge.ask": "彻底删除这条记忆？其文本将从所有索引和历史中移除，无法撤销。",
    "mem.purge.confirm": "确定彻底删除", "mem.purged": "已彻底删除。",
    "mem.forgotten": "已遗忘，可点“恢复”找回。", "mem.restored": "已恢复。", "mem.edited": "已保存，旧版本保留在历史中。",
    "mem.history": "历史", "mem.links": "关联", "mem.nolinks": "没有关联。", "mem.before": "修改前",
    "mem.merged_in": "合并进来的", "mem.expires.placeholder": "例如 30d 或 2027-01-31",
    "link": { related: "相关", supersedes: "取代了", superseded_by: "被取代为", derived_from: "源自",
      merged: "合并", in: "←", out: "→" },
    "event": { created: "创建", updated: "编辑", merged: "合并", superseded: "被取代", archived: "归档",
      deleted: "遗忘", restored: "恢复", reverted: "撤销编辑", unmerged: "撤销合并", confirmed: "续期",
      resolved: "已处理冲突", possible_conflict: "可能冲突", purged: "彻底删除" },
    "timeline.title": "时间线",
    "review.due": "已过期或待审阅", "review.due.none": "没有待审阅的记忆。",
    "review.confirm": "仍然有效 —— 续期", "review.conflicts": "可能的冲突", "review.conflicts.none": "没有冲突。",
    "review.new": "新", "review.old": "旧", "review.keep": "两条都保留", "review.replace": "新的取代旧的",
    "review.changes": "本周的变化", "review.changes.none": "本周没有变化。",
    "review.undo": "撤销", "review.undone": "已撤销。", "review.resolved": "已处理。", "review.confirmed": "已续期。",
    "review.gone": "（记忆已不存在）",
    "capture.title": "从对话中捕获", "capture.text": "粘贴一条消息或一段对话",
    "capture.preview": "预览", "capture.none": "没有发现值得记住的内容。",
    "capture.save": "保存选中项", "capture.saved": "已保存 {n} 条：", "capture.confidence": "置信度",
    "capture.nothing": "请至少勾选一项。",
    "ingest.title": "导入文档", "ingest.drop": "把 Markdown、文本或聊天导出文件拖到这里，或选择文件：",
    "ingest.file": "文件", "ingest.scope": "范围", "ingest.tags": "标签（逗号分隔）",
    "ingest.uploading": "正在上传 {name}…", "ingest.result": "{name}：导入 {ingested} 个，{chunks} 个片段",
    "ingest.skipped": "跳过 {path}：{reason}", "ingest.sources": "来源", "ingest.nosources": "还没有导入任何内容。",
    "ingest.resync": "重新导入", "ingest.remove": "移除", "ingest.remove.confirm": "确认移除",
    "ingest.chunks": "{n} 个片段", "ingest.removed": "已移除。", "ingest.resynced": "已重新导入。",
    "graph.title": "关系图", "graph.depth": "深度", "graph.memory": "查看这条记忆", "graph.nodes": "节点",
    "graph.center": "中心",
    "stats.title": "统计", "stats.total": "记忆总数", "stats.last7": "最近 7 天新增",
    "stats.size": "存储大小", "stats.vectors": "向量数", "stats.model": "模型",
    "stats.llm_calls": "今日 LLM 调用", "stats.llm_tokens": "今日 LLM 词元",
    "stats.weekly": "每周新增记忆（按类型）", "stats.by_scope": "各范围的记忆",
    "stats.by_type": "各类型的记忆", "stats.injections": "每周上下文注入次数", "stats.by_status": "按状态",
  },
};

const STORAGE_KEY = "mnemo.lang";

function initialLang() {
  try {
    const saved = localStorage.getItem(STORAGE_KEY);
    if (saved in STRINGS) return saved;
  } catch { /* storage disabled: fall back to the browser's language */ }
  return (navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
}

let lang = initialLang();

export function getLang() {
  return lang;
}

export function setLang(next) {
  lang = next in STRINGS ? next : "en";
  try {
    localStorage.setItem(STORAGE_KEY, lang);
  } catch { /* the choice just won't survive a reload */ }
  applyStatic();
}

/** A UI string; "{name}" placeholders are filled from vars. A missing key shows itself. */
export function t(key, vars) {
  const text = STRINGS[lang][key] ?? STRINGS.en[key] ?? key;
  return typeof text === "string" ? text.replace(/\{(\w+)\}/g, (_, k) => String(vars?.[k] ?? "")) : text;
}

/** One entry of a nested table ("types", "status", "explain", "action", "link"), or the raw key. */
export function label(table, key) {
  return t(table)?.[key] ?? key;
}

/** Fill the shell's data-i18n elements and set <html lang> and the title. */
export function applyStatic() {
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  document.title = t("app.title");
  for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of document.querySelectorAll("[data-i18n-label]")) el.setAttribute("aria-label", t(el.dataset.i18nLabel));
}

const pad = (n) => String(n).padStart(2, "0");

/** A timestamp (ISO text or epoch seconds) as local "YYYY-MM-DD HH:MM"; unparseable input as is. */
export function fmtDate(value) {
  if (value === null || value === undefined || value === "") return "";
  const d = typeof value === "number" ? new Date(value < 1e12 ? value * 1000 : value) : new Date(value);
  if (Number.isNaN(d.getTime())) return String(value);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** The local calendar day of a timestamp, "YYYY-MM-DD" (timeline groups). */
export function fmtDay(value) {
  return fmtDate(value).slice(0, 10);
}
