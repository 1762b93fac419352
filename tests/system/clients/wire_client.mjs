// An agent service in another language, written from the wire contract alone (docs/reference/wire-contract.md):
// it records and numbers its writes with the record script, pushes one chain message onto
// the Redis list (the envelope table, the rest of the chain reversed), and reads each
// write's result from `celery-task-meta-<task id>`. No Celery, no Redis library: RESP over
// a socket.
//
//   node wire_client.mjs <redis port> <db> <script file> <spec json>
//   spec: {"run": {...}, "writes": [{...}], "publish": true|false, "wait_s": 60}
// Prints {"seqs": [...], "task_ids": [...], "results": [...]} (results only when published).
import net from "node:net";
import fs from "node:fs";
import crypto from "node:crypto";

const [port, db, scriptFile, specJson] = process.argv.slice(2);
const spec = JSON.parse(specJson);

function encode(args) {
  let out = `*${args.length}\r\n`;
  for (const a of args) {
    const b = Buffer.from(String(a), "utf8");
    out += `$${b.length}\r\n${b.toString("utf8")}\r\n`;
  }
  return out;
}

// Parses one RESP reply from buf at pos; returns [value, nextPos] or null when incomplete.
function parse(buf, pos) {
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
    let at = end + 2;
    const items = [];
    for (let i = 0; i < n; i++) {
      const got = parse(buf, at);
      if (!got) return null;
      items.push(got[0]);
      at = got[1];
    }
    return [items, at];
  }
  throw new Error(`unexpected reply type ${type}`);
}

function connect() {
  const socket = net.createConnection({ host: "127.0.0.1", port: Number(port) });
  let buf = Buffer.alloc(0);
  const waiting = [];
  socket.on("data", (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    for (;;) {
      const got = parse(buf, 0);
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
  return { call, close: () => socket.end() };
}

const redis = connect();
await redis.call("SELECT", db);
const script = fs.readFileSync(scriptFile, "utf8");
const runId = spec.run.run_id;
const taskIds = spec.writes.map(() => crypto.randomUUID());
const argv = [];
spec.writes.forEach((write, i) => argv.push("memory.write", taskIds[i], JSON.stringify([spec.run, write])));
const [last, base] = await redis.call(
  "EVAL", script, 3, `memory:run-seq:${runId}`, `memory:write-records:${runId}`,
  "memory:write-records-due", spec.writes.length, 30 * 86400, 7 * 86400, runId, ...argv);
// Sequence numbers are above 2^53 / 1000: BigInt keeps them exact.
const seqs = spec.writes.map((_, i) => BigInt(base) + BigInt(i + 1));
const prevs = seqs.map((seq, i) => (i === 0 ? BigInt(last) : seqs[i - 1]));
const argsOf = (i) => `[${JSON.stringify(spec.run)},${JSON.stringify(spec.writes[i])},${seqs[i]},${prevs[i]}]`;

if (spec.publish) {
  // The rest of the chain, next one last.
  const rest = [];
  for (let i = spec.writes.length - 1; i >= 1; i--) {
    rest.push(`{"task":"memory.write","args":${argsOf(i)},"kwargs":{},` +
      `"options":{"task_id":"${taskIds[i]}"},"immutable":true,"subtask_type":null}`);
  }
  const body = `[${argsOf(0)},{},` +
    `{"callbacks":null,"errbacks":null,"chain":[${rest.join(",")}],"chord":null}]`;
  const envelope = {
    body: Buffer.from(body, "utf8").toString("base64"),
    "content-encoding": "utf-8",
    "content-type": "application/json",
    headers: { lang: "js", task: "memory.write", id: taskIds[0], root_id: taskIds[0],
               parent_id: null, group: null, retries: 0, argsrepr: "(run, write)",
               kwargsrepr: "{}" },
    properties: { correlation_id: taskIds[0], delivery_mode: 2,
                  delivery_info: { exchange: "memory.writes", routing_key: "memory.writes" },
                  priority: 0, body_encoding: "base64", delivery_tag: crypto.randomUUID() },
  };
  await redis.call("LPUSH", "memory.writes", JSON.stringify(envelope));
}

const results = [];
if (spec.wait_s) {
  const deadline = Date.now() + spec.wait_s * 1000;
  for (const id of taskIds) {
    for (;;) {
      const raw = await redis.call("GET", `celery-task-meta-${id}`);
      if (raw) { results.push(JSON.parse(raw).result); break; }
      if (Date.now() > deadline) throw new Error(`no result for ${id}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
redis.close();
console.log(JSON.stringify({ seqs: seqs.map(String), task_ids: taskIds, results }));
