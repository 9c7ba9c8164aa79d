// What a transform returns: the answer of gateway_transform (ABI v1.1), which a mutator hook calls to rewrite
// the request before it is sent or the answer before the client gets it.
import { Input } from "./input";
import { Outcome } from "./outcome";

/**
 * A transform handler: input.body is the JSON body (the request in OpenAI's shape for stage "before", the whole
 * answer for stage "after"), input.text is empty.
 */
export type TransformFn = (input: Input) => Rewrite;

/**
 * A transform's result: the verdict, data and error of an Outcome (a failing rewrite fails its hook, which
 * denies when the hook says on_fail.deny), and the replacement body, if any.
 */
export class Rewrite {
  outcome: Outcome = Outcome.pass();
  /**
   * One JSON object, at most twice the size of the body given, or null to leave the body as it was. A request
   * must stay a valid request of its endpoint and keep its "stream": the gateway refuses anything else as a
   * check error. It is not written when the outcome is an error.
   */
  body: string | null = null;

  /** A pass that leaves the body as it was. */
  static unchanged(): Rewrite {
    return new Rewrite();
  }

  /** A pass that replaces the body with body, one JSON object. */
  static replace(body: string): Rewrite {
    const r = new Rewrite();
    r.body = body;
    return r;
  }

  /** A fail with data {"reason": reason}; the body is left as it was. */
  static fail(reason: string): Rewrite {
    const r = new Rewrite();
    r.outcome = Outcome.fail(reason);
    return r;
  }

  /** A check error with message msg; the body is left as it was. */
  static error(msg: string): Rewrite {
    const r = new Rewrite();
    r.outcome = Outcome.error(msg);
    return r;
  }

  /** Sets key in the data object shown in hook_results; value as Json.from takes it. */
  with<T>(key: string, value: T): Rewrite {
    this.outcome.with<T>(key, value);
    return this;
  }
}
