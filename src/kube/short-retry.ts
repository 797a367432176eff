import { setTimeout as delay } from "node:timers/promises";
import { isForbidden, isNotFound } from "./errors.js";

// kubeadm's GetConfigMapWithShortRetry (util/apiclient/idempotency.go): a read tried again every
// 50 ms for 350 ms when it fails, the last error returned after that. Behind a load balancer one
// API server whose etcd is down (a control plane mid-upgrade, or one an interrupted run left so)
// answers 500 while the others answer: the next try goes elsewhere. NotFound and Forbidden are
// answers, not hiccups: they are not tried again (kubeadm's loop would return them 350 ms later).

export const SHORT_RETRY_INTERVAL_MS = 50;
export const SHORT_RETRY_TIMEOUT_MS = 350;

export async function withShortRetry<T>(read: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + SHORT_RETRY_TIMEOUT_MS;
  for (;;) {
    try {
      return await read();
    } catch (e) {
      if (isNotFound(e) || isForbidden(e) || Date.now() + SHORT_RETRY_INTERVAL_MS > deadline) {
        throw e;
      }
    }
    await delay(SHORT_RETRY_INTERVAL_MS);
  }
}
