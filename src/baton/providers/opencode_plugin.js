// Baton's OpenCode plugin: the CLI's own turn events, one JSON line each.
//
// OpenCode loads it from the `plugin` list Baton adds to the terminal's config. It
// writes to the file named by BATON_OPENCODE_EVENTS (nothing when unset): a `baton.loaded`
// line once the CLI's instance has loaded its plugins, a `chat.message` line for each
// prompt the CLI took, and the bus events that say where a turn stands (session status
// and errors, questions, permission requests), the messages with their tokens and cost,
// and each finished text part. Streaming deltas are left out. One appendFileSync per
// line (O_APPEND), so lines never interleave; a failed write is ignored, since a plugin
// that throws would disturb the CLI.

import { appendFileSync } from "node:fs"

const KEPT = new Set([
  "session.created",
  "session.status",
  "session.idle",
  "session.error",
  "message.updated",
  "permission.asked",
  "permission.replied",
  "question.asked",
  "question.replied",
  "question.rejected",
])

export const BatonTurns = async () => {
  const path = process.env.BATON_OPENCODE_EVENTS
  if (!path) return {}
  const write = (record) => {
    try {
      const line = JSON.stringify({ ...record, baton_time: Date.now() / 1000 }) + "\n"
      appendFileSync(path, line, { mode: 0o600 })
    } catch {
      // Never disturb the CLI.
    }
  }
  write({ type: "baton.loaded", pid: process.pid })
  return {
    "chat.message": async (input, output) => {
      write({
        type: "chat.message",
        sessionID: input?.sessionID,
        messageID: output?.message?.id,
      })
    },
    event: async ({ event }) => {
      if (!event || typeof event.type !== "string") return
      if (event.type === "message.part.updated") {
        const part = event.properties?.part
        if (part?.type === "text" && part.time?.end && !part.synthetic) {
          write({
            type: "text.finished",
            sessionID: part.sessionID,
            messageID: part.messageID,
            partID: part.id,
            text: part.text,
          })
        }
        return
      }
      if (KEPT.has(event.type)) write({ type: event.type, properties: event.properties })
    },
  }
}
