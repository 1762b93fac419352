// An agent service in Node.js, written from the wire contract alone (docs/reference/
// wire-contract.md): no Celery, no npm packages. It speaks Redis's protocol (RESP) over a
// socket, numbers and records a run's writes with the record script (record.lua, the
// script the wire contract shows), publishes them as one chain message, reads each write's
// result from `celery-task-meta-<task id>`, then asks the `memory.context` task for the
// memory the next run starts with.
//
//   REDIS_URL=redis://127.0.0.1:6379/0 node examples/node_agent/agent.mjs [--json]
//
// Environment: REDIS_URL (required), MEMORY_AGENT, MEMORY_USER, MEMORY_COMPANY (optional).
import net from "node:net";
import fs from "node:fs";
import crypto from "node:crypto";

const AGENT = process.env.MEMORY_AGENT || "example-node-assistant";
const USER = process.env.MEMORY_USER || "u-7";
const COMPANY = process.env.MEMORY_COMPANY || "acme";
const QUEUE = "memory.writes";
const LEARNED = [
  { note: "User prefers metric units.", type: "Preference" },
  { note: "User's fiscal year starts in April.", type: "Context" },
  { note: "Team reviews happen on Thursdays.", type: "Context", scope_hint: "agent" },
];

// --- a minimal Redis client: RESP arrays out, replies parsed as they arrive ----------------
function encode(args) {
  const parts = [Buffer.from(`*${args.length}\r\n`)];
  for (const arg of args) {
    const bytes = Buffer.from(String(arg), "utf8");
    parts.push(Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from("\r\n"));
  }
  return Buffer.concat(parts);
}

// One reply from buf at pos: [value, next position], or null while incomplete.
function parseReply(buf, pos) {
  const end = buf.indexOf("\r\n", pos);
  if (end < 0) return null;
  const type = String.fromCharCode(buf[pos]);
  const line = buf.toString("utf8", pos + 1, end);
  if (type === "+") return [line, end + 2];
  if (type === "-") return [new Error(line), end + 2];
  if (type === ":") return [Number(line), end + 2];
  if (type === "$") {
    const n = Number(line);
    if (n < 0) return [null, end + 2];
    if (buf.length < end + 2 + n + 2) return null;
    return [buf.toString("utf8", end + 2, end + 2 + n), end + 2 + n + 2];
  }
  if (type === "*") {
    const n = Number(line);
    if (n < 0) return [null, end + 2];
    const items = [];
    let at = end + 2;
    for (let i = 0; i < n; i++) {
      const got = parseReply(buf, at);
      if (!got) return null;
      items.push(got[0]);
      at = got[1];
    }
    return [items, at];
  }
  throw new Error(`unexpected RESP type ${type}`);
}

async function connect(redisUrl) {
  const url = new URL(redisUrl);
  const socket = net.createConnection({ host: url.hostname || "127.0.0.1",
                                        port: Number(url.port || 6379) });
  await new Promise((resolve, reject) => { socket.once("connect", resolve); socket.once("error", reject); });
  let buf = Buffer.alloc(0);
  const waiting = [];
  socket.on("data", (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    for (;;) {
      const got = parseReply(buf, 0);
      if (!got) break;
      buf = buf.subarray(got[1]);
      const { resolve, reject } = waiting.shift();
      got[0] instanceof Error ? reject(got[0]) : resolve(got[0]);
    }
  });
  const call = (...args) => new Promise((resolve, reject) => {
    waiting.push({ resolve, reject });
    socket.write(encode(args));
  });
  if (url.password) {
    const user = decodeURIComponent(url.username || "");
    await (user ? call("AUTH", user, decodeURIComponent(url.password))
                : call("AUTH", decodeURIComponent(url.password)));
  }
  const db = (url.pathname || "/0").slice(1) || "0";
  await call("SELECT", db);
  return { call, close: () => socket.end() };
}

// --- the wire contract ----------------------------------------------------------------------
const json = (value) => JSON.stringify(value);

// A signature of the chain: the task, its arguments and the id its result is stored under.
const signature = (task, args, taskId) =>
  `{"task":${json(task)},"args":${args},"kwargs":{},"options":{"task_id":${json(taskId)}},` +
  `"immutable":true,"subtask_type":null}`;

// The envelope the Redis transport expects; `rest` is the rest of the chain, next one LAST.
function envelope(task, taskId, args, rest, argsrepr) {
  const body = `[${args},{},{"callbacks":null,"errbacks":null,"chain":[${rest.join(",")}],"chord":null}]`;
  return json({
    body: Buffer.from(body, "utf8").toString("base64"),
    "content-encoding": "utf-8",
    "content-type": "application/json",
    headers: { lang: "js", task, id: taskId, root_id: taskId, parent_id: null, group: null,
               retries: 0, argsrepr, kwargsrepr: "{}" },
    properties: { correlation_id: taskId, delivery_mode: 2,
                  delivery_info: { exchange: QUEUE, routing_key: QUEUE },
                  priority: 0, body_encoding: "base64", delivery_tag: crypto.randomUUID() },
  });
}

async function result(redis, taskId, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const raw = await redis.call("GET", `celery-task-meta-${taskId}`);
    if (raw) return JSON.parse(raw).result;
    if (Date.now() > deadline) throw new Error(`no result for task ${taskId}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

// Numbers, records and publishes a turn's writes; returns their seqs and task ids.
async function enqueueWrites(redis, script, run, writes) {
  const taskIds = writes.map(() => crypto.randomUUID());
  const recorded = [];
  writes.forEach((write, i) => recorded.push("memory.write", taskIds[i], json([run, write])));
  const [last, base] = await redis.call(
    "EVAL", script, 3, `memory:run-seq:${run.run_id}`, `memory:write-records:${run.run_id}`,
    "memory:write-records-due", writes.length, 30 * 86400, 7 * 86400, run.run_id, ...recorded);
  // Numbers start above the Redis clock in microseconds: past 2^53, so BigInt, and written
  // into the JSON text as they are.
  const seqs = writes.map((_, i) => BigInt(base) + BigInt(i + 1));
  const prevs = seqs.map((seq, i) => (i === 0 ? BigInt(last) : seqs[i - 1]));
  const args = (i) => `[${json(run)},${json(writes[i])},${seqs[i]},${prevs[i]}]`;
  const rest = [];
  for (let i = writes.length - 1; i >= 1; i--) rest.push(signature("memory.write", args(i), taskIds[i]));
  await redis.call("LPUSH", QUEUE, envelope("memory.write", taskIds[0], args(0), rest, "(run, write)"));
  return { seqs: seqs.map(String), taskIds };
}

async function memoryContext(redis, request) {
  const taskId = crypto.randomUUID();
  await redis.call("LPUSH", QUEUE, envelope("memory.context", taskId, json([request]), [], "(request)"));
  return result(redis, taskId, 60000);
}

// --- the agent --------------------------------------------------------------------------------
const redisUrl = process.env.REDIS_URL;
if (!redisUrl) {
  console.error("REDIS_URL is not set (the Redis of the running stack, e.g. redis://127.0.0.1:6379/0)");
  process.exit(2);
}
const script = fs.readFileSync(new URL("./record.lua", import.meta.url), "utf8");
const redis = await connect(redisUrl);
const run = { run_id: `node-run-${crypto.randomUUID().slice(0, 12)}`, agent_id: AGENT,
              user_id: USER, company_id: COMPANY, source: "user" };
const { seqs, taskIds } = await enqueueWrites(redis, script, run, LEARNED);
const results = [];
for (const taskId of taskIds) results.push(await result(redis, taskId, 60000));
const context = await memoryContext(redis, { agent_id: AGENT, user_id: USER, company_id: COMPANY,
                                             input_text: "Which units does the user prefer?" });
redis.close();

if (process.argv.includes("--json")) {
  console.log(JSON.stringify({ run_id: run.run_id, seqs, task_ids: taskIds, results, context }));
} else {
  console.log(`run ${run.run_id}`);
  results.forEach((r, i) => console.log(`  ${r.disposition.padEnd(18)} ${LEARNED[i].note}`));
  console.log("\nmemory the next run starts with:\n");
  console.log(context.ok ? (context.rendered || "(nothing yet)") : `error: ${context.error}`);
}
