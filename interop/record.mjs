// Records every framework: each recorder runs in a process of its own, as
// each registers its own global OpenTelemetry tracer provider and
// instrumentation. Usage: node record.mjs [vercel|langgraph|mastra|openai-agents ...]
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { dirname } from "node:path";

const here = dirname(fileURLToPath(import.meta.url));
const all = ["vercel", "langgraph", "mastra", "openai-agents"];
const chosen = process.argv.slice(2).length ? process.argv.slice(2) : all;

let failed = 0;
for (const name of chosen) {
  if (!all.includes(name)) {
    console.error(`record: no recorder ${name} (have ${all.join(", ")})`);
    process.exit(2);
  }
  console.log(`== ${name}`);
  const r = spawnSync(process.execPath, [`record-${name}.mjs`], { cwd: here, stdio: "inherit" });
  if (r.status !== 0) {
    console.error(`record: ${name} failed (exit ${r.status})`);
    failed++;
  }
}
process.exit(failed ? 1 : 0);
