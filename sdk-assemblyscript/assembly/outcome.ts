// What a check returns.
import { Json } from "./json";

/**
 * A check's result: pass or fail, JSON data shown in hook_results, an optional transformed text, or an error.
 * An error makes the call a check error whatever the verdict (the gateway then applies the check's failOnError).
 */
export class Outcome {
  pass: bool = true;
  data: Json | null = null;
  transformedText: string | null = null;
  error: string | null = null;

  /** A pass, without data. */
  static pass(): Outcome {
    return new Outcome();
  }

  /** A fail with data {"reason": reason}. */
  static fail(reason: string): Outcome {
    const o = new Outcome();
    o.pass = false;
    return o.with("reason", reason);
  }

  /** A pass that replaces the checked text with text (an empty text is a valid transformation). */
  static transform(text: string): Outcome {
    const o = new Outcome();
    o.transformedText = text;
    return o;
  }

  /** A check error with message msg. */
  static error(msg: string): Outcome {
    const o = new Outcome();
    o.pass = false;
    o.error = msg.length > 0 ? msg : "error";
    return o;
  }

  /** Sets key in the data object (replacing an earlier value); value as Json.from takes it. */
  with<T>(key: string, value: T): Outcome {
    let data = this.data;
    if (data == null) {
      data = Json.object();
      this.data = data;
    }
    data.set<T>(key, value);
    return this;
  }
}
