import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { resetEffects } from "../../../../src/cluster/reset.js";
import type { ResetData } from "../../../../src/phases/reset/data.js";
import type { ResetEtcdAccess } from "../../../../src/phases/reset/etcd-access.js";
import type { Host } from "../../../../src/remote/host.js";
import type { Phase } from "../../../../src/workflow/phase.js";
import { Runner } from "../../../../src/workflow/runner.js";
import { recordingLogger, type RecordingLogger } from "../../../support/init-fixtures.js";

// Shared by the reset phase tests: ResetData over a host (a dry run's when asked, as prepareReset
// builds it), an etcd access that records its calls,
// node files written under a rootfs, and the real Runner to run one phase.

export const CRI = "unix:///var/run/containerd/containerd.sock";

/** An etcd access that answers `outcome` (or throws it) and records every call. */
export function recordingEtcd(
  outcome: Awaited<ReturnType<ResetEtcdAccess["removeMember"]>> | Error,
) {
  const calls: Parameters<ResetEtcdAccess["removeMember"]>[] = [];
  const access: ResetEtcdAccess = {
    removeMember: (...args) => {
      calls.push(args);
      return outcome instanceof Error ? Promise.reject(outcome) : Promise.resolve(outcome);
    },
  };
  return { access, calls };
}

/** What a test may set: the data's fields, and the flags and report the effects are built from. */
export type ResetDataOverrides = Partial<Omit<ResetData, "host" | "wording" | "askToConfirm">> & {
  /** --force; default true (no question). */
  force?: boolean;
  /** Where a dry run reports the changes it does not make. */
  report?: (line: string) => void;
};

/** ResetData over a real host, its effects built as prepareReset builds them (resetEffects). */
export function resetData(host: Host, over: ResetDataOverrides = {}): ResetData {
  const { force = true, dryRun = false, report = () => undefined, etcd, ...rest } = over;
  return {
    ...resetEffects({
      host,
      etcd: etcd ?? recordingEtcd("removed").access,
      dryRun,
      force,
      report,
    }),
    dryRun,
    confirm: undefined,
    ignorePreflightErrors: new Set(),
    certificatesDir: "/etc/kubernetes/pki",
    criSocket: CRI,
    cleanupTmpDir: false,
    clusterConfiguration: undefined,
    client: undefined,
    removeEtcdMember: true,
    state: {},
    ...rest,
  };
}

/** Writes node files (host paths → content) under `root`. */
export async function writeNodeFiles(root: string, files: Record<string, string>): Promise<void> {
  for (const [path, content] of Object.entries(files)) {
    const real = join(root, path);
    await mkdir(dirname(real), { recursive: true });
    await writeFile(real, content);
  }
}

/** Runs one reset phase with the real Runner; returns what it printed. */
export async function runResetPhase(
  phase: Phase<ResetData>,
  data: ResetData,
): Promise<RecordingLogger> {
  const log = recordingLogger();
  await new Runner([phase], log).run(data, { dryRun: data.dryRun });
  return log;
}
