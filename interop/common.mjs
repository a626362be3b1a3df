// Shared parts of the recorders: the OpenTelemetry SDK that collects each
// framework's own spans and writes them as one OTLP/JSON document, the
// article's two tools with a real outbox file, and the scenarios each
// framework's mock model plays.
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { JsonTraceSerializer } from "@opentelemetry/otlp-transformer";

export const prompt = "Send customer C-42 their invoice 42 by email.";
export const subject = "Invoice 42";

// Scenarios: the emails each sends, in order, and whether the first send
// takes effect and then throws TimeoutError("response lost").
export const scenarios = {
  // The article's window: the send takes effect, the caller sees a
  // timeout, the model sends the same email again and it succeeds.
  dup: { sends: ["ana@example.com", "ana@example.com"], firstTimesOut: true },
  // Control A: the same agent sends two different emails, both succeed.
  different: { sends: ["ana@example.com", "bob@example.com"], firstTimesOut: false },
  // Control B: two identical sends, both succeed.
  twice: { sends: ["ana@example.com", "ana@example.com"], firstTimesOut: false },
};

// The tool calls the mock model makes, one step each, then it answers.
export function script(scenario) {
  const steps = [{ id: "call_lookup_1", name: "lookup_customer", args: { customer_id: "C-42" } }];
  scenario.sends.forEach((to, i) =>
    steps.push({ id: `call_send_${i + 1}`, name: "send_invoice_email", args: { to, subject } }),
  );
  return steps;
}

// TimeoutError is what the caller sees when the email went out but the
// response was lost.
const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

// mockResults is what an AI SDK mock model (MockLanguageModelV3, V4)
// answers a script's steps with, one doGenerate result a step: one tool
// call each, then the text "Invoice sent.".
export function mockResults(steps) {
  const results = steps.map((s) => ({
    content: [{ type: "tool-call", toolCallId: s.id, toolName: s.name, input: JSON.stringify(s.args) }],
    finishReason: { unified: "tool-calls", raw: "tool_calls" },
    usage,
    warnings: [],
  }));
  results.push({
    content: [{ type: "text", text: "Invoice sent." }],
    finishReason: { unified: "stop", raw: "stop" },
    usage,
    warnings: [],
  });
  return results;
}

export class TimeoutError extends Error {
  constructor(message) {
    super(message);
    this.name = "TimeoutError";
  }
}

// Tools are the article's two tools over a real outbox file.
export function tools(outboxPath, scenario) {
  mkdirSync(dirname(outboxPath), { recursive: true });
  writeFileSync(outboxPath, "");
  let sent = 0;
  return {
    lookupCustomer({ customer_id }) {
      return { customer_id, name: "Ana Lima", email: "ana@example.com" };
    },
    sendInvoiceEmail({ to, subject }) {
      sent++;
      appendFileSync(outboxPath, `${new Date().toISOString()}\tsend #${sent}\tto=${to}\tsubject=${subject}\n`);
      if (sent === 1 && scenario.firstTimesOut) {
        throw new TimeoutError("response lost");
      }
      return { status: "sent", message_id: `msg-${sent}` };
    },
  };
}

// Recorder is one tracer provider, registered globally (the
// instrumentations use the global one), whose finished spans are taken
// and written after each recording.
export class Recorder {
  constructor(service) {
    this.exporter = new InMemorySpanExporter();
    this.provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ "service.name": service }),
      spanProcessors: [new SimpleSpanProcessor(this.exporter)],
    });
    this.provider.register();
  }

  tracer(name) {
    return this.provider.getTracer(name);
  }

  // write serialises the spans finished since the last write (and any
  // given) with the OpenTelemetry JS OTLP/JSON serializer.
  async write(path, extra = []) {
    await this.provider.forceFlush();
    const spans = [...this.exporter.getFinishedSpans(), ...extra];
    this.exporter.reset();
    if (spans.length === 0) {
      throw new Error(`${path}: no spans recorded`);
    }
    const bytes = JsonTraceSerializer.serializeRequest(spans);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, Buffer.from(bytes).toString("utf8") + "\n");
    return spans.length;
  }
}
