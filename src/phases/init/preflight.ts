import { checkPatches } from "./control-plane.js";
// The "preflight" phase of `kubeforge init`: kubeadm's cmd/phases/init/preflight.go. The root
// check runs first and alone (kubeadm since PR #128799, 1.33), then the init node checks;
// errors that --ignore-preflight-errors does not cover stop the workflow with kubeadm's
// aggregate report. Then, except in a dry run, the control-plane images are pulled
// (kubeadm's RunPullImagesCheck: node/preflight/image-pull.ts).
import {
  type InitChecksOptions,
  initNodeChecks,
  NEWEST_SUPPORTED_MINOR,
} from "../../node/preflight/init-checks.js";
import { type PreflightOutput, runChecks } from "../../node/preflight/checks.js";
import { imagePullInput, pullControlPlaneImages } from "../../node/preflight/image-pull.js";
import { isPrivilegedUserCheck } from "../../node/preflight/resource-checks.js";
import { subnetOverlapWarnings } from "../../config/validate.js";
import type { Phase, PhaseContext } from "../../workflow/phase.js";
import type { InitData } from "./data.js";

// The Runner prefixes every line with "[preflight] " itself: kubeadm's lines lose their own
// prefix (and the tab before "[WARNING ...]") so they read the same once it is added.
const unprefixed = (line: string) => line.replace(/^\[preflight\] /, "").replace(/^\t/, "");

export type PreflightPhaseOptions = Pick<InitChecksOptions, "newestSupportedMinor" | "searchPath">;

/** The preflight phase with explicit options (tests point `searchPath` at their own folder). */
export function createPreflightPhase(opts: PreflightPhaseOptions = {}): Phase<InitData> {
  return {
    name: "preflight",
    short: "Run pre-flight checks",
    run: async (data: InitData, ctx: PhaseContext) => {
      const out: PreflightOutput = {
        info: (l) => ctx.log.info(unprefixed(l)),
        warn: (l) => ctx.log.warn(unprefixed(l)),
      };
      ctx.log.info("Running pre-flight checks");
      await checkPatches(data);
      // kubeadm accepts overlapping pod and service ranges; they are worth a warning, no more.
      for (const w of subnetOverlapWarnings(data.cfg.cluster.networking)) ctx.log.warn(w);
      await runChecks([isPrivilegedUserCheck(data.host)], data.ignorePreflightErrors, out);
      const checks = await initNodeChecks(data, {
        newestSupportedMinor: opts.newestSupportedMinor ?? NEWEST_SUPPORTED_MINOR,
        ...(opts.searchPath === undefined ? {} : { searchPath: opts.searchPath }),
        warn: (l) => ctx.log.warn(unprefixed(l)),
      });
      await runChecks(checks, data.ignorePreflightErrors, out);
      const nr = data.cfg.init.nodeRegistration;
      await pullControlPlaneImages(
        imagePullInput(data.cfg.cluster, data.release, nr, data.host, {
          ...(opts.searchPath === undefined ? {} : { searchPath: opts.searchPath }),
        }),
        data.ignorePreflightErrors,
        out,
        { dryRun: data.dryRun, log: (line) => ctx.log.info(line) },
      );
    },
  };
}

export const preflightPhase: Phase<InitData> = createPreflightPhase();
