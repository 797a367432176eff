// SIMULATION (test double). Fault injection for failure-path tests: requests that fail with a
// chosen status, connections dropped mid-request, health endpoints that report failure.
// Not a Kubernetes behaviour: a test instrument. Failure bodies are Status objects as
// kube-apiserver's (k8s: staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go).

export interface FaultResponse {
  code: number;
  /** Status reason, e.g. "ServiceUnavailable"; default from the code. */
  reason?: string;
  message?: string;
}

export interface FaultSpec {
  /** HTTP method to match ("POST"); any when absent. */
  method?: string;
  /** Path prefix to match ("/api/v1/namespaces/kube-system/secrets"); any when absent. */
  pathPrefix?: string;
  /** How many matching requests fail; forever when absent. */
  times?: number;
  /** A Status response, or "drop": the socket is destroyed before any response. Default: 500. */
  respond?: FaultResponse | "drop";
  /** Wait this long before acting (the request itself is not processed when respond is set). */
  delayMs?: number;
}

interface ActiveFault extends FaultSpec {
  remaining: number;
}

const REASONS: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  409: "Conflict",
  410: "Expired",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

export function defaultReason(code: number): string {
  return REASONS[code] ?? "Unknown";
}

export class FaultInjector {
  private faults: ActiveFault[] = [];
  private livezOk = true;
  private readyzOk = true;

  /** Adds a fault; the first matching fault wins. */
  inject(spec: FaultSpec): void {
    this.faults.push({ ...spec, remaining: spec.times ?? Number.POSITIVE_INFINITY });
  }

  /** /livez (and /healthz, /readyz) fail with the etcd check when false. */
  setLivez(ok: boolean): void {
    this.livezOk = ok;
  }

  /** /readyz alone fails when false. */
  setReadyz(ok: boolean): void {
    this.readyzOk = ok;
  }

  /** Faults with a finite count not yet used up: a test's proof that its fault was hit. */
  unused(): FaultSpec[] {
    return this.faults.filter((f) => f.remaining > 0 && Number.isFinite(f.remaining));
  }

  clear(): void {
    this.faults = [];
    this.livezOk = true;
    this.readyzOk = true;
  }

  get livez(): boolean {
    return this.livezOk;
  }

  get readyz(): boolean {
    return this.readyzOk && this.livezOk;
  }

  /** The fault that applies to this request, consuming one of its `times`. */
  take(method: string, path: string): FaultSpec | undefined {
    const f = this.faults.find(
      (x) =>
        x.remaining > 0 &&
        (x.method === undefined || x.method.toUpperCase() === method.toUpperCase()) &&
        (x.pathPrefix === undefined || path.startsWith(x.pathPrefix)),
    );
    if (!f) return undefined;
    f.remaining--;
    return f;
  }
}
