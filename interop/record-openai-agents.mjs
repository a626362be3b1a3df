// Records the OpenAI Agents SDK (@openai/agents) driven by its own
// ScriptedModel (@openai/agents/testing), traced by OpenInference's
// OpenAI Agents instrumentation (a trace processor that writes
// OpenTelemetry spans).
import * as agents from "@openai/agents";
import { ScriptedModel, functionCall, assistantMessage } from "@openai/agents/testing";
import { OpenAIAgentsInstrumentation } from "@arizeai/openinference-instrumentation-openai-agents";
import { z } from "zod";
import { Recorder, prompt, scenarios, script, tools } from "./common.mjs";

const rec = new Recorder("openai-agents");
const instrumentation = new OpenAIAgentsInstrumentation({ tracerProvider: rec.provider });
instrumentation.manuallyInstrument(agents);

async function run(name, scenario) {
  const t = tools(`recordings/${name}.outbox.txt`, scenario);
  const model = new ScriptedModel([
    ...script(scenario).map((s) => [functionCall(s.name, s.args, { callId: s.id })]),
    [assistantMessage("Invoice sent.")],
  ]);
  const agent = new agents.Agent({
    name: "invoice_agent",
    instructions: "Send customers their invoices.",
    model,
    tools: [
      agents.tool({
        name: "lookup_customer",
        description: "Look up a customer by id (a read).",
        parameters: z.object({ customer_id: z.string() }),
        execute: async (args) => t.lookupCustomer(args),
      }),
      agents.tool({
        name: "send_invoice_email",
        description: "Send the customer's invoice by email (a side effect).",
        parameters: z.object({ to: z.string(), subject: z.string() }),
        execute: async (args) => t.sendInvoiceEmail(args),
      }),
    ],
  });
  await agents.run(agent, prompt, { maxTurns: 10 });
  model.assertComplete();
  await agents.getGlobalTraceProvider().forceFlush();
  return rec.write(`recordings/${name}.otlp.json`);
}

for (const [sc, scenario] of Object.entries(scenarios)) {
  const name = `openai-agents-${sc}`;
  console.log(`${name}: ${await run(name, scenario)} spans`);
}
await agents.getGlobalTraceProvider().shutdown();
