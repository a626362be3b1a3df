// Records Mastra: an Agent with two createTool tools, driven by the AI
// SDK's MockLanguageModelV3 (Mastra runs AI SDK models), traced by
// Mastra's own observability with @mastra/otel-exporter exporting to the
// recorder's in-memory exporter.
import { Mastra } from "@mastra/core/mastra";
import { Agent } from "@mastra/core/agent";
import { createTool } from "@mastra/core/tools";
import { Observability } from "@mastra/observability";
import { OtelExporter } from "@mastra/otel-exporter";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";
import { Recorder, mockResults, prompt, scenarios, script, tools } from "./common.mjs";

// model answers each step of the script with one tool call, then text
// (Mastra's generate calls doGenerate).
function model(steps) {
  return new MockLanguageModelV3({ provider: "mock", modelId: "mock-model", doGenerate: mockResults(steps) });
}

const rec = new Recorder("mastra");

async function run(name, scenario) {
  const t = tools(`recordings/${name}.outbox.txt`, scenario);
  const steps = script(scenario);
  const agent = new Agent({
    id: "invoice-agent",
    name: "invoice-agent",
    instructions: "Send customers their invoices.",
    model: model(steps),
    tools: {
      lookup_customer: createTool({
        id: "lookup_customer",
        description: "Look up a customer by id (a read).",
        inputSchema: z.object({ customer_id: z.string() }),
        execute: async (input) => t.lookupCustomer(input),
      }),
      send_invoice_email: createTool({
        id: "send_invoice_email",
        description: "Send the customer's invoice by email (a side effect).",
        inputSchema: z.object({ to: z.string(), subject: z.string() }),
        execute: async (input) => t.sendInvoiceEmail(input),
      }),
    },
  });
  // Mastra's exporter batches into its own tracer provider and shuts the
  // exporter down with it: the spans it exports are kept here.
  const exported = [];
  const sink = {
    export(spans, done) {
      exported.push(...spans);
      done({ code: 0 });
    },
    shutdown: async () => {},
    forceFlush: async () => {},
  };
  const exporter = new OtelExporter({
    // The endpoint is never called: the span exporter given is used.
    provider: { custom: { endpoint: "http://127.0.0.1:4318", protocol: "http/json" } },
    exporter: sink,
    signals: { logs: false },
  });
  const mastra = new Mastra({
    agents: { invoiceAgent: agent },
    observability: new Observability({
      configs: { otel: { serviceName: "mastra", exporters: [exporter] } },
    }),
  });
  await mastra.getAgent("invoiceAgent").generate(prompt, { maxSteps: steps.length + 1 });
  await mastra.shutdown();
  return rec.write(`recordings/${name}.otlp.json`, exported);
}

for (const [sc, scenario] of Object.entries(scenarios)) {
  const name = `mastra-${sc}`;
  console.log(`${name}: ${await run(name, scenario)} spans`);
}
