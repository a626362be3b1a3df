// Records the Vercel AI SDK (`ai`) with its MockLanguageModelV4, through
// both telemetry integrations of @ai-sdk/otel: OpenTelemetry (the GenAI
// semantic conventions: execute_tool spans) and LegacyOpenTelemetry (the
// ai.* spans `ai` 6's experimental_telemetry wrote: ai.toolCall).
import { generateText, tool, stepCountIs } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { OpenTelemetry, LegacyOpenTelemetry } from "@ai-sdk/otel";
import { z } from "zod";
import { Recorder, mockResults, prompt, scenarios, script, tools } from "./common.mjs";

// model answers each step of the script with one tool call, then text.
function model(steps) {
  return new MockLanguageModelV4({ provider: "mock", modelId: "mock-model", doGenerate: mockResults(steps) });
}

async function run(rec, integration, name, scenario) {
  const t = tools(`recordings/${name}.outbox.txt`, scenario);
  const steps = script(scenario);
  await generateText({
    model: model(steps),
    prompt,
    stopWhen: stepCountIs(steps.length + 1),
    tools: {
      lookup_customer: tool({
        description: "Look up a customer by id (a read).",
        inputSchema: z.object({ customer_id: z.string() }),
        execute: async (args) => t.lookupCustomer(args),
      }),
      send_invoice_email: tool({
        description: "Send the customer's invoice by email (a side effect).",
        inputSchema: z.object({ to: z.string(), subject: z.string() }),
        execute: async (args) => t.sendInvoiceEmail(args),
      }),
    },
    telemetry: { isEnabled: true, functionId: `invoice-agent-${name}`, integrations: [integration] },
  });
  return rec.write(`recordings/${name}.otlp.json`);
}

const rec = new Recorder("vercel-ai");
for (const [kind, make] of [
  ["otel", () => new OpenTelemetry({ tracer: rec.tracer("vercel-ai-otel") })],
  ["legacy", () => new LegacyOpenTelemetry({ tracer: rec.tracer("vercel-ai-legacy") })],
]) {
  for (const [sc, scenario] of Object.entries(scenarios)) {
    const name = `vercel-${kind}-${sc}`;
    console.log(`${name}: ${await run(rec, make(), name, scenario)} spans`);
  }
}
