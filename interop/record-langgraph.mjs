// Records LangGraph.js with OpenInference's LangChain instrumentation: a
// graph built by hand (an agent node that calls the model, a ToolNode, an
// edge back), driven by @langchain/core's fakeModel().
import * as CallbackManagerModule from "@langchain/core/callbacks/manager";
import { LangChainInstrumentation } from "@arizeai/openinference-instrumentation-langchain";
import { fakeModel } from "@langchain/core/testing";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { StateGraph, MessagesAnnotation, START, END } from "@langchain/langgraph";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { z } from "zod";
import { Recorder, prompt, scenarios, script, tools } from "./common.mjs";

const rec = new Recorder("langgraph");
const instrumentation = new LangChainInstrumentation();
instrumentation.manuallyInstrument(CallbackManagerModule);

async function run(name, scenario) {
  const t = tools(`recordings/${name}.outbox.txt`, scenario);
  const lookup = tool(async (args) => JSON.stringify(t.lookupCustomer(args)), {
    name: "lookup_customer",
    description: "Look up a customer by id (a read).",
    schema: z.object({ customer_id: z.string() }),
  });
  const send = tool(async (args) => JSON.stringify(t.sendInvoiceEmail(args)), {
    name: "send_invoice_email",
    description: "Send the customer's invoice by email (a side effect).",
    schema: z.object({ to: z.string(), subject: z.string() }),
  });
  let model = fakeModel();
  for (const s of script(scenario)) {
    model = model.respondWithTools([{ name: s.name, args: s.args, id: s.id }]);
  }
  model = model.respond(new AIMessage("Invoice sent."));
  const bound = model.bindTools([lookup, send]);

  const graph = new StateGraph(MessagesAnnotation)
    .addNode("agent", async (state) => ({ messages: [await bound.invoke(state.messages)] }))
    .addNode("tools", new ToolNode([lookup, send]))
    .addEdge(START, "agent")
    .addConditionalEdges("agent", (state) => (state.messages.at(-1).tool_calls?.length ? "tools" : END))
    .addEdge("tools", "agent")
    .compile();
  graph.name = "invoice_agent";
  await graph.invoke(
    { messages: [new HumanMessage(prompt)] },
    { configurable: { thread_id: `lg-${name}` }, recursionLimit: 20 },
  );
  return rec.write(`recordings/${name}.otlp.json`);
}

for (const [sc, scenario] of Object.entries(scenarios)) {
  const name = `langgraph-${sc}`;
  console.log(`${name}: ${await run(name, scenario)} spans`);
}
