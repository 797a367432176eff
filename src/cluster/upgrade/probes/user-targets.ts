import { spawn } from "node:child_process";
import { applyOrder } from "../../../kube/apply.js";
import { isAlreadyExists, isNotFound } from "../../../kube/errors.js";
import { withDefaultNamespace } from "../../../kube/resources.js";
import type { KubeClient, KubeObject, ObjectRef } from "../../../kube/types.js";
import { serviceProxyPath } from "../../../manifests/probe-canary.js";
import type { ProbeTarget } from "./prober.js";
import type { UserRequest } from "./user-workloads.js";
import { serviceProxyTarget } from "./workload-targets.js";

// What the user's workload probe does (user-workloads.ts says what it is): the manifest's
// missing objects created (namespaced ones without a namespace in "default", as kubectl does)
// and removed again at the end, newest first; each request a probe target; the command run by
// /bin/sh on the runner in a process group of its own, so a probe that outlives its timeout
// takes its children with it.

/**
 * Creates what does not exist yet, appending each object to `created` as soon as it exists: a
 * failure half-way leaves `created` naming what the clean-up must remove.
 */
export async function createUserObjects(
  client: KubeClient,
  objects: readonly KubeObject[],
  created: ObjectRef[] = [],
): Promise<ObjectRef[]> {
  for (const obj of applyOrder(objects)) {
    const info = await client.resource(obj.apiVersion, obj.kind);
    const target = withDefaultNamespace(obj, info.namespaced);
    const namespace = info.namespaced ? target.metadata.namespace : undefined;
    try {
      await client.create(target);
    } catch (e) {
      if (isAlreadyExists(e)) continue;
      throw new Error(
        `creating ${obj.kind} ${obj.metadata.name} of the probe manifest: ${(e as Error).message}`,
        {
          cause: e,
        },
      );
    }
    created.push({
      apiVersion: obj.apiVersion,
      kind: obj.kind,
      name: obj.metadata.name,
      ...(namespace ? { namespace } : {}),
    });
  }
  return created;
}

/** Deletes what createUserObjects created, newest first; gone already is fine. */
export async function removeUserObjects(client: KubeClient, created: readonly ObjectRef[]) {
  for (const ref of [...created].reverse()) {
    await client.delete(ref).catch((e: unknown) => {
      if (!isNotFound(e)) throw e;
    });
  }
}

/** A GET from the runner: any 2xx or 3xx answer is up (redirects are not followed). */
export function runnerUrlTarget(name: string, url: string): ProbeTarget {
  return {
    name,
    kind: "workload",
    url,
    checks: `GET ${url} from the runner`,
    check: async (signal) => {
      const res = await fetch(url, { signal, redirect: "manual" });
      await res.body?.cancel();
      if (res.status < 200 || res.status >= 400) throw new Error(`${url} answered ${res.status}`);
    },
  };
}

export function userRequestTarget(client: KubeClient, r: UserRequest): ProbeTarget {
  if (r.via === "runner") return runnerUrlTarget(r.name, r.url);
  return serviceProxyTarget(
    client,
    r.name,
    serviceProxyPath(r.namespace, r.service, r.port, r.path),
  );
}

/** The last non-empty line a command printed, bounded, for the sample's error. */
function lastLine(out: string): string {
  return (
    out
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean)
      .pop()
      ?.slice(0, 200) ?? ""
  );
}

/** Runs `/bin/sh -c command`; resolves on exit 0, else rejects with the status and last line. */
export function runProbeCommand(command: string, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("/bin/sh", ["-c", command], {
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    const keep = (chunk: Buffer) => {
      out = (out + chunk.toString("utf8")).slice(-4096);
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    const kill = () => {
      try {
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    };
    signal.addEventListener("abort", kill, { once: true });
    child.on("error", (e) => {
      signal.removeEventListener("abort", kill);
      reject(e);
    });
    child.on("close", (code, sig) => {
      signal.removeEventListener("abort", kill);
      if (code === 0) return resolve();
      const said = lastLine(out);
      const status = code === null ? `was killed by ${sig}` : `exited with ${code}`;
      reject(new Error(`the probe command ${status}${said ? `: ${said}` : ""}`));
    });
  });
}

/** The user's command, run on the runner every interval: exit status 0 is up. */
export function commandTarget(command: string): ProbeTarget {
  return {
    name: "probe-command",
    kind: "workload",
    url: "command",
    checks: "the probe command (/bin/sh -c) on the runner",
    check: (signal) => runProbeCommand(command, signal),
  };
}
