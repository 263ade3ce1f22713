// mnemo for OpenCode: memories from earlier sessions go into each conversation, and new ones
// are captured when a session goes idle. Installed by `mnemo install opencode`; removed by
// `mnemo uninstall opencode`. It runs the same `mnemo hook …` commands as Claude Code's hooks,
// so behaviour (scopes, budgets, "never the same memory twice per session", pause) is shared.
//
// OpenCode hooks used: "chat.message" (before a user message is stored: the session's key
// memories on its first message, then the memories relevant to each message, appended as a
// synthetic text part) and "event" (session.compacted: re-inject after compaction;
// session.idle: write the conversation as a transcript and capture from it in the background).
import { spawn } from "node:child_process"
import { mkdirSync, readdirSync, statSync, unlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const MNEMO = process.env.MNEMO_COMMAND || "__MNEMO_COMMAND__"
// the --db / --model given to `mnemo install` (none: the settings of the moment)
const OPTIONS = [] // written by `mnemo install`
// a session's transcript is rewritten at each idle for `mnemo hook stop`; older ones are removed
const KEEP_TRANSCRIPTS_MS = 24 * 3600 * 1000
const TIMEOUT_MS = 10000
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

function disabled() {
  return ["1", "true", "yes", "on"].includes(String(process.env.MNEMO_DISABLE || "").trim().toLowerCase())
}

// Run `mnemo hook EVENT` with the payload on stdin; resolve to the context it answers ("" on any failure:
// memory must never break the conversation).
function runHook(event, payload, { command = MNEMO, timeoutMs = TIMEOUT_MS } = {}) {
  return new Promise((resolve) => {
    let out = ""
    let err = ""
    let child
    try {
      child = spawn(command, [...OPTIONS, "hook", event], { stdio: ["pipe", "pipe", "pipe"], env: process.env })
    } catch (e) {
      resolve({ context: "", code: null, error: String(e) })
      return
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
    child.stdout.on("data", (d) => (out += d))
    child.stderr.on("data", (d) => (err += d))
    child.on("error", (e) => {
      clearTimeout(timer)
      resolve({ context: "", code: null, error: String(e) })
    })
    child.on("close", (code) => {
      clearTimeout(timer)
      let context = ""
      try {
        const answer = JSON.parse(out.trim() || "{}")
        context = (answer.hookSpecificOutput && answer.hookSpecificOutput.additionalContext) || ""
      } catch {
        context = ""
      }
      resolve({ context, code, error: err })
    })
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify({ ...payload, mnemo_client: "opencode" }))
  })
}

// An id shaped like OpenCode's own ascending part ids ("prt_" + time + random).
function partId() {
  const time = (BigInt(Date.now()) * 4096n).toString(16).padStart(12, "0").slice(-12)
  let rand = ""
  for (let i = 0; i < 14; i++) rand += BASE62[Math.floor(Math.random() * 62)]
  return `prt_${time}${rand}`
}

function textOf(parts) {
  return (parts || [])
    .filter((p) => p && p.type === "text" && !p.synthetic && typeof p.text === "string")
    .map((p) => p.text)
    .join("\n")
}

function transcriptFolder() {
  return join(tmpdir(), "mnemo-opencode")
}

// Conversations must not pile up in the temp folder: a transcript not rewritten for a day is gone
// (its capture ran long ago), and a deleted session's at once.
function pruneTranscripts(folder, now = Date.now()) {
  let names = []
  try {
    names = readdirSync(folder)
  } catch {
    return
  }
  for (const name of names) {
    if (!name.endsWith(".jsonl")) continue
    const path = join(folder, name)
    try {
      if (now - statSync(path).mtimeMs > KEEP_TRANSCRIPTS_MS) unlinkSync(path)
    } catch {
      // another process removed it, or it is not ours to remove
    }
  }
}

function forgetTranscript(sessionID) {
  try {
    unlinkSync(join(transcriptFolder(), `${sessionID}.jsonl`))
  } catch {
    // there was none
  }
}

// The session's messages as a Claude Code-style JSONL transcript, for `mnemo hook stop`.
async function writeTranscript(client, sessionID) {
  const res = await client.session.messages({ path: { id: sessionID } })
  const items = (res && (res.data || res)) || []
  const lines = []
  for (const item of items) {
    const role = item && item.info && item.info.role
    const text = textOf(item && item.parts)
    if ((role === "user" || role === "assistant") && text.trim()) {
      lines.push(JSON.stringify({ type: role, sessionId: sessionID, message: { role, content: text } }))
    }
  }
  if (!lines.length) return null
  const folder = transcriptFolder()
  mkdirSync(folder, { recursive: true, mode: 0o700 })
  pruneTranscripts(folder)
  const path = join(folder, `${sessionID}.jsonl`)
  writeFileSync(path, lines.join("\n") + "\n", { mode: 0o600 })
  return path
}

export const MnemoPlugin = async ({ directory, worktree, client }) => {
  const cwd = worktree && worktree !== "/" ? worktree : directory
  const started = new Set()
  const compacted = new Set()

  const hooks = {
    "chat.message": async (input, output) => {
      if (disabled() || !output || !Array.isArray(output.parts)) return
      const sid = input.sessionID
      const blocks = []
      if (!started.has(sid) || compacted.has(sid)) {
        const source = compacted.has(sid) ? "compact" : "startup"
        started.add(sid)
        compacted.delete(sid)
        const r = await runHook("session-start", { session_id: sid, cwd, hook_event_name: "SessionStart", source })
        blocks.push(r.context)
      }
      const prompt = textOf(output.parts)
      if (prompt.trim()) {
        const r = await runHook("user-prompt", { session_id: sid, cwd, hook_event_name: "UserPromptSubmit", prompt })
        blocks.push(r.context)
      }
      const text = blocks.filter(Boolean).join("\n")
      if (!text) return
      const messageID = (output.message && output.message.id) || input.messageID || (output.parts[0] && output.parts[0].messageID)
      output.parts.push({ id: partId(), sessionID: sid, messageID, type: "text", text, synthetic: true })
    },
    event: async ({ event }) => {
      if (disabled() || !event) return
      const sid = event.properties && (event.properties.sessionID || (event.properties.info && event.properties.info.id))
      if (!sid) return
      if (event.type === "session.deleted") {
        forgetTranscript(sid)
      } else if (event.type === "session.compacted") {
        compacted.add(sid)
        await runHook("pre-compact", { session_id: sid, cwd, hook_event_name: "PreCompact", trigger: "auto" })
      } else if (event.type === "session.idle" && client) {
        try {
          const transcript = await writeTranscript(client, sid)
          if (transcript) {
            await runHook("stop", { session_id: sid, cwd, hook_event_name: "Stop", transcript_path: transcript })
          }
        } catch {
          // capture is best effort; the conversation goes on
        }
      }
    },
  }
  if (process.env.MNEMO_PLUGIN_PROBE) {
    // tests: prove that OpenCode loaded this file and called it with its plugin context
    writeFileSync(process.env.MNEMO_PLUGIN_PROBE, JSON.stringify({ loaded: true, cwd, context: Object.keys({ directory, worktree, client }), hooks: Object.keys(hooks) }))
  }
  return hooks
}
