"""``mnemo ask`` and ``mnemo chat``: talk to the configured chat endpoint with your memory.

Each turn is the seeds' loop: recall for the message (the same context block and budget as the
assistant hooks), put the block in as a system message, stream the answer to the terminal, then
capture what the exchange states worth keeping. The exchange is first queued on disk, redacted
(``Mnemo.queue_capture``), so a capture cut short by Ctrl-C or a closed terminal is done by the
next ``ask``, ``chat`` or ``proxy`` (``run_capture_queue``); in ``chat`` it runs in a background
thread and is announced when done, never holding up the next prompt.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .base import OPERATIONS, CLIState, _render, command

if TYPE_CHECKING:
    from .._settings.door import Serving

OPERATIONS.update({"ask": "context", "chat": "context"})

#: the session's own turns kept as short-term memory, at most this many tokens (oldest dropped first)
HISTORY_TOKENS = 3000


def _endpoint(state: CLIState, llm_model: str | None) -> tuple[str, str, str]:
    """(base URL, model, API-key variable) of the chat endpoint, or a usage error saying what to set."""
    c = state.config
    base, model = c["llm_base_url"], llm_model or c["llm_model"]
    if not base or not model:
        raise click.UsageError("mnemo ask/chat answer with an OpenAI-compatible chat endpoint: set llm_base_url and llm_model "
                               "(config.toml, or MNEMO_LLM_BASE_URL / MNEMO_LLM_MODEL; the key in MNEMO_LLM_API_KEY)")
    return base, model, c["llm_api_key_env"]


def _queue_folder() -> Path:
    from .._settings.config import home

    return home() / "capture-queue"


def _saved_line(done: list[dict[str, Any]]) -> str:
    """What a capture kept, in one line: the new memories, and how many repeated known ones."""
    saved = [s for d in done for s in d.get("saved") or []]
    new = [s for s in saved if s.get("action") != "merged"]
    known = len(saved) - len(new)
    if not saved:
        return "nothing new to remember"
    parts = [f"{s.get('content', '')[:60]} ({s.get('type', 'note')}{', replaces an older one' if s.get('action') == 'superseded' else ''})"
             for s in new[:3]]
    text = f"remembered {len(new)}: " + "; ".join(parts) + (f" and {len(new) - 3} more" if len(new) > 3 else "") if new else "nothing new"
    return text + (f" ({known} already known)" if known else "")


class Turn:
    """One question and its answer: recall, the streamed reply, the capture."""

    def __init__(self, serving: "Serving", state: CLIState, endpoint: tuple[str, str, str], *, scope: str | None, recall: bool) -> None:
        self.serving = serving
        self.state = state
        self.base, self.model, self.key_env = endpoint
        self.scope = scope
        self.recall = recall
        self.context: dict[str, Any] = {"memories": [], "text": ""}

    def messages(self, history: list[dict[str, str]], text: str, *, why: bool = False) -> list[dict[str, Any]]:
        """The request: the session's turns, then the memory block, then the new message."""
        from .._llm.stream import with_memory

        if self.recall:
            c = self.state.config

            def find() -> dict[str, Any]:
                return self.serving.mnemo().context(text, scope=self.scope, budget_tokens=c["context_budget_tokens"],
                                                     top_k=c["context_top_k"], surface="chat", explain=why)
            self.context = self.serving.call(find)  # type: ignore[assignment]
        block = self.context["text"] if self.context.get("memories") else ""
        return with_memory([*history, {"role": "user", "content": text}], block)

    def stream(self, messages: list[dict[str, Any]], out: Any) -> tuple[str, bool]:
        """Stream the answer to ``out``; returns (the text, whether it ran to the end). Ctrl-C stops it."""
        from .._llm.stream import stream_chat

        parts: list[str] = []
        gen = stream_chat(self.base, self.model, messages, api_key_env=self.key_env)
        try:
            for delta in gen:
                parts.append(delta)
                out.write(delta)
                out.flush()
        except KeyboardInterrupt:
            gen.close()
            return "".join(parts), False
        return "".join(parts), True

    def queue(self, text: str, answer: str) -> Path:
        """Queue the exchange for capture (redacted, on disk) and return its file."""
        messages = [{"role": "user", "content": text}] + ([{"role": "assistant", "content": answer}] if answer.strip() else [])
        llm = bool(self.state.config["capture_llm"])
        return self.serving.call(lambda: self.serving.mnemo().queue_capture(_queue_folder(), messages, scope=self.scope, llm=llm))  # type: ignore[return-value]

    def capture(self, job: Path | None = None) -> list[dict[str, Any]]:
        """Capture the queued exchange ``job`` (or everything queued)."""
        return self.serving.call(lambda: self.serving.mnemo().run_capture_queue(_queue_folder(), only=job))  # type: ignore[return-value]


def _why_lines(context: dict[str, Any]) -> list[str]:
    mems = context.get("memories") or []
    if not mems:
        return ["no memory was relevant enough to add"]
    return [f"{m['id']} ({m['type']}, {m.get('reason', '')}): {m['content'][:100]}" for m in mems]


@command("ask", scope_option=True)
@click.argument("question", nargs=-1, required=True)
@click.option("--scope", help="Scope recalled from and captured into (default: the current one; recall adds global).")
@click.option("--no-recall", is_flag=True, help="Do not add memories to the question.")
@click.option("--no-capture", is_flag=True, help="Do not capture memories from the exchange.")
@click.option("--why", is_flag=True, help="Say which memories were added and why, before the answer.")
@click.option("--llm-model", help="The chat model (default: the setting llm_model).")
def ask_cmd(state: CLIState, question: tuple[str, ...], scope: str | None, no_recall: bool, no_capture: bool, why: bool,
            llm_model: str | None) -> None:
    """Ask the configured chat model one question, with your relevant memories added; the answer streams in.

    Afterwards what the exchange states worth keeping (a decision, a preference, a fact) is
    captured, and one line says what was remembered."""
    from .._settings.door import Serving

    text = " ".join(question).strip()
    if not text:
        raise click.UsageError("the question is empty")
    endpoint = _endpoint(state, llm_model)
    with state.open(create=True) as m:
        serving = Serving(lambda: m)
        turn = Turn(serving, state, endpoint, scope=scope, recall=not no_recall)
        turn.capture()  # exchanges an earlier run left queued
        messages = turn.messages([], text, why=why)
        if why and not state.as_json:
            for line in _why_lines(turn.context):
                _render.err.print(f"[dim]memory:[/] {_render.escape(line)}")
        sink = _Collect() if state.as_json else sys.stdout
        answer, finished = turn.stream(messages, sink)
        if not state.as_json:
            sys.stdout.write("\n")
            sys.stdout.flush()
        done: list[dict[str, Any]] = []
        if not no_capture and answer:
            try:
                done = turn.capture(turn.queue(text, answer))
            except KeyboardInterrupt:  # it stays queued: the next ask, chat or proxy captures it
                _render.err.print("capture left queued for the next run")
        result = {"answer": answer, "finished": finished, "memories": [{k: mem[k] for k in ("id", "type", "content", "reason") if k in mem}
                                                                       for mem in turn.context.get("memories") or []],
                  "captured": [s for d in done for s in d.get("saved") or []]}
    if state.as_json:
        state.emit(result, lambda: None)
    elif not no_capture and answer:
        _render.err.print(f"[dim]{_render.escape(_saved_line(done))}[/]")
    if not finished:
        sys.exit(130)


class _Collect:
    """A stream that keeps what is written (``--json``: the answer comes in the JSON)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, s: str) -> None:
        self.parts.append(s)

    def flush(self) -> None:
        pass


CHAT_HELP = """/remember TEXT   save a memory        /forget ID   forget one
/why             what was recalled for the last message, and why
/scope [SCOPE]   show or change the scope     /model [NAME]   show or change the chat model
/new             start a new conversation (forget this session's turns)
/exit            leave (Ctrl-D too); Ctrl-C stops an answer"""


@command("chat", scope_option=True)
@click.option("--scope", help="Scope recalled from and captured into (default: the current one; recall adds global).")
@click.option("--no-recall", is_flag=True, help="Do not add memories to the messages.")
@click.option("--no-capture", is_flag=True, help="Do not capture memories from the conversation.")
@click.option("--llm-model", help="The chat model (default: the setting llm_model).")
def chat_cmd(state: CLIState, scope: str | None, no_recall: bool, no_capture: bool, llm_model: str | None) -> None:
    """Chat with the configured model in the terminal, with your memories recalled for every message.

    The conversation's own turns are kept as short-term memory; what it states worth keeping is
    captured in the background after each answer. Type /help for the slash commands."""
    from .._settings.door import Serving

    endpoint = _endpoint(state, llm_model)
    with state.open(create=True) as m:
        serving = Serving(lambda: m)
        chat = _Chat(serving, state, endpoint, scope=scope or state.config["scope"], recall=not no_recall, capture=not no_capture)
        chat.run()


class _Chat:
    """The interactive loop of ``mnemo chat``."""

    def __init__(self, serving: "Serving", state: CLIState, endpoint: tuple[str, str, str], *, scope: str, recall: bool, capture: bool) -> None:
        self.turn = Turn(serving, state, endpoint, scope=scope, recall=recall)
        self.serving = serving
        self.capture_on = capture
        self.history: list[dict[str, str]] = []
        self.pending: list[threading.Thread] = []
        self.prompt = "› "
        self._print_lock = threading.Lock()
        self._streaming = False
        self._held: list[str] = []

    def run(self) -> None:
        readline = _readline()
        out = _render.out
        out.print(f"[bold]mnemo chat[/] · {_render.escape(self.turn.model)} · scope {_render.escape(self.turn.scope or 'global')} · "
                  "/help for commands, Ctrl-D to leave")
        self._background(lambda: self.turn.capture())  # what an earlier run left queued
        while True:
            try:
                line = input(self.prompt)
            except EOFError:
                out.print()
                break
            except KeyboardInterrupt:
                out.print()
                continue
            text = line.strip()
            if not text:
                continue
            if text.startswith("/"):
                if self._command(text) == "exit":
                    break
                continue
            self._say(text)
        self._finish()
        if readline is not None:
            _save_history(readline, lambda line: self.serving.call(lambda: self.serving.mnemo().redact(line).text))

    def _say(self, text: str) -> None:
        from ..errors import ChatError, MnemoError

        with self._print_lock:
            self._streaming = True
        try:
            messages = self.turn.messages(_trimmed(self.history), text)
            answer, finished = self.turn.stream(messages, sys.stdout)
        except (ChatError, MnemoError) as exc:
            self._streaming_done()
            _render.err.print(f"[red]error:[/] {_render.escape(str(exc))}")
            return
        sys.stdout.write("\n" if finished else "\n(interrupted)\n")
        self._streaming_done()
        self.history += [{"role": "user", "content": text}, {"role": "assistant", "content": answer}]
        if self.capture_on and answer.strip():
            job = self.turn.queue(text, answer)
            self._background(lambda: self.turn.capture(job))

    def _background(self, work: Any) -> None:
        """Run a capture in a thread; announce what it kept (nothing when it kept nothing)."""
        def run() -> None:
            try:
                done = work()
            except Exception as exc:  # the exchange stays queued; say so, never crash the chat
                self._notice(f"capture failed, left queued: {exc}")
                return
            if any(d.get("saved") for d in done):
                self._notice(_saved_line(done))

        t = threading.Thread(target=run, daemon=True)
        t.start()
        self.pending = [p for p in self.pending if p.is_alive()] + [t]

    def _notice(self, text: str) -> None:
        """A line from the background: above the prompt the person may be typing at, or after
        the answer being streamed (never inside it)."""
        with self._print_lock:
            if self._streaming:
                self._held.append(text)
                return
            readline = _readline()
            buffer = readline.get_line_buffer() if readline is not None else ""
            sys.stdout.write(f"\r\x1b[2K({text})\n{self.prompt}{buffer}")
            sys.stdout.flush()

    def _streaming_done(self) -> None:
        with self._print_lock:
            self._streaming = False
            for text in self._held:
                sys.stdout.write(f"({text})\n")
            self._held = []
            sys.stdout.flush()

    def _finish(self) -> None:
        alive = [t for t in self.pending if t.is_alive()]
        if not alive:
            return
        _render.err.print(f"[dim]saving {len(alive)} capture{'s' if len(alive) > 1 else ''}… (Ctrl-C leaves it queued for the next run)[/]")
        try:
            for t in alive:
                t.join()
        except KeyboardInterrupt:
            _render.err.print("[dim]left queued: the next ask, chat or proxy captures it[/]")

    def _command(self, text: str) -> str | None:
        from ..errors import MnemoError

        name, _, arg = text[1:].partition(" ")
        arg = arg.strip()
        out = _render.out
        try:
            if name in ("exit", "quit", "q"):
                return "exit"
            if name == "help":
                out.print(CHAT_HELP, markup=False)
            elif name == "remember" and arg:
                mem, action = self.serving.call(lambda: self.serving.mnemo().remember_many(
                    [dict(content=arg, scope=self.turn.scope or self.serving.mnemo().scope, source="chat")])[0])  # type: ignore[misc]
                out.print(f"{action} {mem.id}")
            elif name == "forget" and arg:
                mem = self.serving.call(lambda: self.serving.mnemo().forget(arg))
                out.print(f"forgot {mem.id} (mnemo restore {mem.id} undoes it)")  # type: ignore[attr-defined]
            elif name == "why":
                for line in _why_lines(self.turn.context):
                    out.print(line, markup=False)
            elif name == "scope":
                if arg:
                    from .._base.models import check_scope

                    self.turn.scope = check_scope(arg)
                out.print(f"scope {self.turn.scope}", markup=False)
            elif name == "model":
                if arg:
                    self.turn.model = arg
                out.print(f"model {self.turn.model}", markup=False)
            elif name == "new":
                self.history = []
                out.print("new conversation (this session's turns forgotten; your memories stay)")
            else:
                out.print(f"unknown command /{name}" + (" (it needs an argument)" if name in ("remember", "forget") else "") + "; /help lists them",
                          markup=False)
        except MnemoError as exc:
            _render.err.print(f"[red]error:[/] {_render.escape(str(exc))}")
        return None


def _trimmed(history: list[dict[str, str]]) -> list[dict[str, str]]:
    """The latest turns that fit in :data:`HISTORY_TOKENS` (whole exchanges, oldest dropped first)."""
    from .._base.tokens import estimate_tokens

    kept: list[dict[str, str]] = []
    used = 0
    for i in range(len(history) - 2, -1, -2):
        pair = history[i:i + 2]
        cost = sum(estimate_tokens(m["content"]) for m in pair)
        if used + cost > HISTORY_TOKENS:
            break
        kept = pair + kept
        used += cost
    return kept


def _readline() -> Any:
    """The line editor (history with the arrow keys), when this Python has one."""
    try:
        import readline
    except ImportError:  # pragma: no cover - Windows without pyreadline
        return None
    if not getattr(_readline, "loaded", False):
        _readline.loaded = True  # type: ignore[attr-defined]
        from .._settings.config import home

        try:
            readline.read_history_file(str(home() / "chat_history"))
        except OSError:
            pass
        readline.set_history_length(1000)
    return readline


def _save_history(readline: Any, redact: Any) -> None:
    """Keep the typed lines for the next chat's arrow keys, redacted like everything mnemo writes."""
    from .._settings.config import home

    lines = [readline.get_history_item(i) for i in range(1, readline.get_current_history_length() + 1)]
    readline.clear_history()
    for line in lines:
        if line:
            readline.add_history(redact(line))
    try:
        home().mkdir(parents=True, exist_ok=True)
        readline.write_history_file(str(home() / "chat_history"))
        (home() / "chat_history").chmod(0o600)
    except OSError:
        pass
