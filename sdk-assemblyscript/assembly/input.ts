// The input of a call, as a handler sees it.
import { WireInput } from "./wire";
import { Some, jsonBool, jsonFloat, jsonInt, jsonString, jsonStrings } from "./json";

function lookup(keys: string[], values: string[], key: string): string | null {
  for (let i = 0; i < keys.length; i++) {
    if (unchecked(keys[i]) == key) return unchecked(values[i]);
  }
  return null;
}

function distinct(keys: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < keys.length; i++) {
    if (!out.includes(unchecked(keys[i]))) out.push(unchecked(keys[i]));
  }
  return out;
}

/**
 * What the gateway asks a check or a condition about.
 *
 * endpoint says what is checked: "chat", "completions" or "embeddings" for a model request (stage "before": text
 * is the messages' text; "after": the answer's text), "mcp" for a tool call (tool and mcpServer set, text the
 * arguments' JSON or the result's text). A routing condition has stage "condition" and no checkId.
 */
export class Input {
  constructor(private w: WireInput) {}

  get text(): string { return this.w.text; }
  get model(): string { return this.w.model; }
  /** `<plugin>.<name>`, e.g. "pii.detect"; empty for a condition. */
  get checkId(): string { return this.w.checkId; }
  get stage(): string { return this.w.stage; }
  get endpoint(): string { return this.w.endpoint; }
  get tool(): string { return this.w.tool; }
  get mcpServer(): string { return this.w.mcpServer; }
  /**
   * The JSON body of a transform call (registerTransform): the request in OpenAI's shape for stage "before",
   * the whole answer for stage "after". Empty in a check or a condition.
   */
  get body(): string { return this.w.body; }

  /** The check's name: what follows the first dot of checkId ("detect" in "pii.detect"), or "". */
  checkName(): string {
    const dot = this.w.checkId.indexOf(".");
    return dot < 0 ? "" : this.w.checkId.substring(dot + 1);
  }

  /** Whether the call checks an MCP tool call. */
  isToolCall(): bool {
    return this.w.endpoint == "mcp";
  }

  /** The first value of metadata key, or null. */
  metadata(key: string): string | null {
    return lookup(this.w.metadataKeys, this.w.metadataValues, key);
  }

  /** The metadata keys, in the order sent, each once. */
  metadataKeys(): string[] {
    return distinct(this.w.metadataKeys);
  }

  /** Parameter name's JSON text, verbatim, or null. */
  param(name: string): string | null {
    return lookup(this.w.paramNames, this.w.paramValues, name);
  }

  /** The parameter names, in the order sent, each once. */
  paramNames(): string[] {
    return distinct(this.w.paramNames);
  }

  /** Parameter name when it is a JSON string, else null. */
  paramString(name: string): string | null {
    const raw = this.param(name);
    return raw == null ? null : jsonString(raw);
  }

  /** Parameter name when it is a JSON number with an integer value that fits an i64 (10, 1e3), else null. */
  paramInt(name: string): Some<i64> | null {
    const raw = this.param(name);
    return raw == null ? null : jsonInt(raw);
  }

  /** Parameter name when it is a JSON number, else null. */
  paramFloat(name: string): Some<f64> | null {
    const raw = this.param(name);
    return raw == null ? null : jsonFloat(raw);
  }

  /** Parameter name when it is true or false, else null. */
  paramBool(name: string): Some<bool> | null {
    const raw = this.param(name);
    return raw == null ? null : jsonBool(raw);
  }

  /** Parameter name when it is a JSON array of strings, else null. */
  paramStrings(name: string): string[] | null {
    const raw = this.param(name);
    return raw == null ? null : jsonStrings(raw);
  }
}
