// The web cockpit's one script. Every value from the server goes into the page as text
// (textContent, never innerHTML): what an agent printed stays text.
"use strict";

const body = document.body;
const VIEW = body.dataset.view;
const ID = body.dataset.id;
const main = document.getElementById("main");
const liveDot = document.getElementById("live");

// -- helpers ---------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "href") node.setAttribute("href", value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function badge(text) {
  const value = String(text || "unknown");
  return el("span", { class: "badge " + value.replace(/[^A-Za-z_]/g, "") }, value);
}

function tokens(t) {
  if (!t) return "–";
  const cost = t.cost ? ` · ${t.cost}` : "";
  return `${t.total.toLocaleString("en")} tokens${cost}`;
}

function clock(iso) {
  if (!iso) return "--:--:--";
  const moment = new Date(iso);
  return isNaN(moment) ? "--:--:--" : moment.toLocaleTimeString([], { hour12: false });
}

function setLive(on) {
  liveDot.classList.toggle("on", on);
}

function setCrumbs(...parts) {
  const nav = document.getElementById("crumbs");
  nav.replaceChildren(...parts.flatMap((part, i) => (i ? [" / ", part] : [part])));
}

class LoginNeeded extends Error {}

async function api(path, options) {
  const response = await fetch(path, { credentials: "same-origin", ...options });
  if (response.status === 401) {
    window.location.assign("/ui/login?next=" + encodeURIComponent(window.location.pathname));
    throw new LoginNeeded();
  }
  let data = null;
  try {
    data = await response.json();
  } catch (error) {
    data = null;
  }
  if (!response.ok) {
    const detail = data && typeof data.detail === "string" ? data.detail : `HTTP ${response.status}`;
    throw new Error(detail);
  }
  return data;
}

function every(seconds, action) {
  let stopped = false;
  async function tick() {
    if (stopped) return;
    try {
      await action();
      setLive(true);
    } catch (error) {
      if (error instanceof LoginNeeded) return;
      setLive(false);
      showProblem(error.message);
    }
    setTimeout(tick, seconds * 1000);
  }
  tick();
  return () => (stopped = true);
}

function showProblem(text) {
  let box = document.getElementById("problem");
  if (!box) {
    box = el("p", { id: "problem", class: "problem" });
    main.prepend(box);
  }
  box.textContent = text || "";
}

// -- index -----------------------------------------------------------------------------

function runCard(run) {
  const link = el("a", { href: `/ui/runs/${encodeURIComponent(run.session)}` }, run.session);
  if (run.problem) {
    return el("div", { class: "card run" }, el("h3", {}, link), el("p", { class: "problem" }, run.problem));
  }
  const verdicts = run.verdicts.map((v) => `r${v.round}: ${v.verdict}`).join(", ") || "no verdict yet";
  return el(
    "div",
    { class: "card run", "data-session": run.session },
    el("h3", {}, link, " ", badge(run.outcome)),
    el(
      "div",
      { class: "facts" },
      el("span", {}, `round ${run.round}`),
      el("span", {}, `${run.phase} · ${run.step} · cycle ${run.cycle}`),
      el("span", {}, tokens(run.tokens)),
      el("span", {}, verdicts),
    ),
    el("div", { class: "muted mono" }, run.wd || run.state_file),
  );
}

function sessionCard(session) {
  return el(
    "div",
    { class: "card session" },
    el("h3", {}, session.name, " ", el("span", { class: "muted" }, "(no run announced)")),
    el(
      "table",
      {},
      session.terminals.map((t) =>
        el(
          "tr",
          {},
          el("td", {}, el("a", { href: `/ui/terminals/${t.id}` }, t.id)),
          el("td", {}, t.profile),
          el("td", {}, t.provider),
          el("td", {}, badge(t.status)),
        ),
      ),
    ),
  );
}

function batchCard(batch) {
  const report = el("a", { href: `/ui/batches/${encodeURIComponent(batch.id)}/report` }, "batch report");
  if (batch.problem) {
    return el("div", { class: "card batch" }, el("h3", {}, `batch ${batch.id}`), el("p", { class: "problem" }, batch.problem));
  }
  const cost = batch.cost_usd ? ` · $${batch.cost_usd.toFixed(4)}` : "";
  return el(
    "div",
    { class: "card batch", "data-batch": batch.id },
    el("h3", {}, `batch ${batch.id} `, badge(batch.status.replace(/ /g, "_"))),
    el("div", { class: "facts" }, el("span", {}, `${batch.tokens.toLocaleString("en")} tokens${cost}`), report),
    el("div", { class: "muted mono" }, batch.repo),
    el(
      "table",
      {},
      batch.loops.map((loop) =>
        el(
          "tr",
          { "data-loop": loop.name },
          el("td", {}, loop.session ? el("a", { href: `/ui/runs/${encodeURIComponent(loop.session)}` }, loop.name) : loop.name),
          el("td", {}, badge(loop.status)),
          el("td", {}, loop.round ? `r${loop.round} ${loop.phase}` : ""),
          el("td", {}, loop.tokens ? loop.tokens.toLocaleString("en") : ""),
        ),
      ),
    ),
    batch.loops.filter((l) => l.error).map((l) => el("p", { class: "problem" }, `${l.name}: ${l.error}`)),
  );
}

function showIndex() {
  setCrumbs("runs");
  every(3, async () => {
    const data = await api("/ui/api/overview");
    const parts = [el("p", { id: "problem", class: "problem" })];
    if (data.batches.length) {
      parts.push(el("h1", {}, "Batches"));
      parts.push(el("div", { class: "grid", id: "batches" }, data.batches.map(batchCard)));
    }
    parts.push(el("h1", {}, "Runs"));
    if (!data.runs.length) parts.push(el("p", { class: "muted" }, "No run has announced itself to this server yet."));
    parts.push(el("div", { class: "grid", id: "runs" }, data.runs.map(runCard)));
    if (data.sessions.length) {
      parts.push(el("h2", {}, "Other sessions"));
      parts.push(el("div", { class: "grid" }, data.sessions.map(sessionCard)));
    }
    main.replaceChildren(...parts);
  });
}

// -- run -------------------------------------------------------------------------------

function agentCard(agent) {
  const title = agent.terminal_id
    ? el("a", { href: `/ui/terminals/${agent.terminal_id}` }, agent.title)
    : agent.title;
  const card = el(
    "div",
    { class: "card agent", "data-role": agent.role, "data-status": agent.status },
    el("h3", {}, title, badge(agent.status), el("span", { class: "muted mono" }, agent.terminal_id || "no terminal")),
    el(
      "div",
      { class: "facts" },
      el("span", {}, agent.provider),
      el("span", {}, `last verdict: ${agent.verdict}`),
      el("span", {}, tokens(agent.tokens)),
    ),
  );
  if (agent.status === "waiting_user_answer") {
    card.append(
      el(
        "div",
        { class: "waiting-note" },
        "Waiting for you. ",
        el("a", { href: `/ui/terminals/${agent.terminal_id}` }, "Answer →"),
      ),
    );
  }
  card.append(el("pre", { class: "screen small" }, agent.screen || ""));
  return card;
}

function turnBars(turns) {
  if (!turns.length) return el("p", { class: "muted" }, "No turn yet.");
  const start = Math.min(...turns.map((t) => Date.parse(t.sent_at)));
  const end = Math.max(...turns.map((t) => Date.parse(t.answered_at || new Date().toISOString())));
  const span = Math.max(1, end - start);
  return el(
    "div",
    { class: "bars" },
    turns.map((t) => {
      const from = ((Date.parse(t.sent_at) - start) / span) * 100;
      const width = Math.max(1.5, (t.seconds * 1000 * 100) / span);
      const bar = el(
        "div",
        { class: "bar" + (t.answered_at ? "" : " open"), title: `${t.title} r${t.round} ${t.phase} cycle ${t.cycle}: ${t.seconds}s` },
        `${t.title} r${t.round} · ${t.seconds}s`,
      );
      // At least wide enough to read, never past the right edge.
      bar.style.marginLeft = `min(${from.toFixed(2)}%, calc(100% - 5.5rem))`;
      bar.style.width = `max(5.5rem, ${Math.min(width, 100 - from).toFixed(2)}%)`;
      return bar;
    }),
  );
}

function showRun() {
  setCrumbs(el("a", { href: "/ui" }, "runs"), ID);
  every(1.5, async () => {
    const data = await api(`/ui/api/runs/${encodeURIComponent(ID)}`);
    const run = data.summary;
    const parts = [el("p", { id: "problem", class: "problem" })];
    parts.push(el("h1", {}, `Run ${run.session} `, badge(run.outcome || "unreadable")));
    if (run.problem) {
      parts.push(el("p", { class: "problem" }, run.problem));
      main.replaceChildren(...parts);
      return;
    }
    if (run.moved_on_to) {
      parts.push(
        el("p", { class: "waiting-note" }, "This state file now belongs to session ",
          el("a", { href: `/ui/runs/${encodeURIComponent(run.moved_on_to)}` }, run.moved_on_to), "."),
      );
    }
    const verdicts = run.verdicts.map((v) => `r${v.round}: ${v.verdict}`).join(", ") || "none yet";
    const approvals = run.gates.filter((g) => g.approved).length;
    parts.push(
      el(
        "div",
        { class: "card" },
        el(
          "div",
          { class: "facts", id: "run-facts" },
          el("span", {}, `round ${run.round}`),
          el("span", {}, `phase ${run.phase} (${run.step}, cycle ${run.cycle})`),
          run.awaiting ? el("span", {}, `awaiting ${run.awaiting}`) : null,
          el("span", {}, `verdicts: ${verdicts}`),
          el("span", {}, `reviews: ${run.gates.length} (${approvals} approved)`),
          el("span", {}, tokens(run.tokens)),
          el("span", {}, `started ${clock(run.started_at)}`),
          run.ended_at ? el("span", {}, `ended ${clock(run.ended_at)}`) : null,
        ),
        el("div", { class: "muted mono" }, run.wd),
        el(
          "div",
          { class: "facts" },
          el("a", { href: `/ui/runs/${encodeURIComponent(run.session)}/report`, id: "report-link" }, "report"),
          run.has_git_start
            ? el("a", { href: `/ui/runs/${encodeURIComponent(run.session)}/diff`, id: "diff-link" }, "diff since start")
            : null,
        ),
      ),
    );
    parts.push(el("h2", {}, "Agents"));
    parts.push(el("div", { class: "grid", id: "agents" }, data.agents.map(agentCard)));
    parts.push(el("h2", {}, "Turns"));
    parts.push(el("div", { class: "card" }, turnBars(data.turns || [])));
    parts.push(el("h2", {}, "Run record"));
    parts.push(
      el(
        "ul",
        { class: "timeline card", id: "timeline" },
        [...data.timeline].reverse().map((e) => el("li", { class: String(e.event || "") }, e.text)),
      ),
    );
    main.replaceChildren(...parts);
  });
}

// -- one agent -------------------------------------------------------------------------

const KEYS = [
  ["Approve (y)", "y", "primary"],
  ["Deny (n)", "n", "danger"],
  ["Enter", "Enter"],
  ["Esc", "Escape"],
  ["1", "1"],
  ["2", "2"],
  ["3", "3"],
  ["↑", "Up"],
  ["↓", "Down"],
];

function showTerminal() {
  setCrumbs(el("a", { href: "/ui" }, "runs"), el("span", { id: "crumb-run" }), ID);
  const statusBadge = el("span", { id: "status" }, badge("…"));
  const heading = el("h1", { id: "agent-title" }, `Agent ${ID}`);
  const facts = el("div", { class: "facts muted", id: "agent-facts" });
  const note = el("p", { class: "waiting-note hidden", id: "waiting-note" }, "This agent is waiting for your answer.");
  const result = el("p", { id: "answer-result", class: "muted" });
  const text = el("textarea", { id: "answer-text", placeholder: "Text to type (submitted like a prompt)" });
  const force = el("input", { type: "checkbox", id: "force" });
  const screen = el("pre", { class: "screen", id: "screen" });
  const buttons = KEYS.map(([label, key, style]) =>
    el("button", { type: "button", class: style || "", "data-key": key, onclick: () => send(null, [key]) }, label),
  );
  const sendButton = el("button", { type: "button", id: "send-text", class: "primary", onclick: () => send(text.value, []) }, "Send text");
  let status = "unknown";

  function refreshControls() {
    const allowed = status === "waiting_user_answer" || force.checked;
    for (const button of [...buttons, sendButton]) button.disabled = !allowed;
    note.classList.toggle("hidden", status !== "waiting_user_answer");
  }

  async function send(message, keys) {
    result.textContent = "sending…";
    try {
      const answer = await api(`/ui/api/terminals/${ID}/answer`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ text: message || null, keys, force: force.checked }),
      });
      result.textContent = `sent; it was ${answer.before}, now ${answer.after}`;
      if (message) text.value = "";
    } catch (error) {
      if (!(error instanceof LoginNeeded)) result.textContent = error.message;
    }
  }

  function setStatus(value) {
    status = value;
    statusBadge.replaceChildren(badge(value));
    body.dataset.status = value;
    refreshControls();
  }

  force.addEventListener("change", refreshControls);
  main.replaceChildren(
    el("p", { id: "problem", class: "problem" }),
    el("div", { class: "card" }, heading, el("div", { id: "status-line" }, statusBadge), facts),
    screen,
    el("div", { class: "card" }, note,
      el("div", { class: "controls" }, buttons),
      el("div", { class: "controls" }, text, sendButton,
        el("label", { class: "muted" }, force, " send even if not waiting")),
      result),
  );
  refreshControls();

  every(5, async () => {
    const data = await api(`/ui/api/terminals/${ID}`);
    heading.textContent = data.role_title ? `${data.role_title} · ${data.id}` : `Agent ${data.id}`;
    facts.replaceChildren(
      el("span", {}, data.provider),
      el("span", {}, data.profile),
      el("span", { class: "mono" }, data.working_directory || ""),
    );
    if (data.run) {
      const link = el("a", { href: `/ui/runs/${encodeURIComponent(data.run.session)}` }, data.run.session);
      document.getElementById("crumb-run").replaceChildren(link);
    }
  });
  streamScreen((frame) => {
    setStatus(frame.status);
    screen.textContent = frame.screen;
  });
}

async function streamScreen(onFrame) {
  // EventSource cannot be told to stop on a 401; fetch reads the same text/event-stream.
  for (;;) {
    try {
      const response = await fetch(`/ui/api/terminals/${ID}/stream`, { credentials: "same-origin" });
      if (response.status === 401) {
        window.location.assign("/ui/login?next=" + encodeURIComponent(window.location.pathname));
        return;
      }
      if (!response.ok) throw new Error(`screen stream: HTTP ${response.status}`);
      setLive(true);
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const chunk = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const data = chunk.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
          if (data) onFrame(JSON.parse(data));
        }
      }
    } catch (error) {
      showProblem(error.message);
    }
    setLive(false);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

// -- start -----------------------------------------------------------------------------

if (VIEW === "index") showIndex();
else if (VIEW === "run") showRun();
else if (VIEW === "terminal") showTerminal();
