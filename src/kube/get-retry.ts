import { setTimeout as delay } from "node:timers/promises";
import { describeNetworkFailure } from "./errors.js";

// client-go's retry of a GET whose connection was reset or closed before its response
// (k8s.io/client-go/rest/request.go, isErrRetryableFunc: "Connection reset by peer" or
// "apiserver is shutting down" are usually transient errors, so GETs are retried; writes are
// not, they are not idempotent). It answers such an attempt as a 500 with "Retry-After: 1" and
// tries again, at most maxRetries (10) times, all within the request's own timeout. kubeadm's
// reads go through it; ours do the same, so a load balancer closing a session or an API server
// stopping under a read costs a second, not the run.

export const GET_RETRY_AFTER_MS = 1_000;
export const GET_MAX_RETRIES = 10;

/** Codes of a connection reset or closed under a request (IsConnectionReset, IsProbableEOF). */
const RESET_CODES = new Set(["ECONNRESET", "EPIPE", "UND_ERR_SOCKET"]);

/** Whether `error` is a connection reset or closed under the request (its innermost cause). */
export function isResetOrEOF(error: unknown): boolean {
  const { code } = describeNetworkFailure(error);
  return code !== undefined && RESET_CODES.has(code);
}

/**
 * Runs `attempt` (one GET, given the milliseconds left of `timeoutMs`) until it settles with
 * anything but a reset, as client-go does: a second between attempts, at most GET_MAX_RETRIES
 * retries, none started once the next would begin after the timeout.
 */
export async function withGetRetry<T>(
  timeoutMs: number,
  attempt: (leftMs: number) => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let retries = 0; ; retries++) {
    try {
      return await attempt(deadline - Date.now());
    } catch (e) {
      const again =
        retries < GET_MAX_RETRIES && isResetOrEOF(e) && Date.now() + GET_RETRY_AFTER_MS < deadline;
      if (!again) throw e;
    }
    await delay(GET_RETRY_AFTER_MS);
  }
}
