import * as core from "@actions/core";

// The action's post step. A dry run changes nothing on the runner, so there is nothing to
// tear down; the rendered folder stays for later steps and artifact uploads.
const dryRunDir = core.getState("dry-run-dir");
if (dryRunDir) core.info(`kubeforge: rendered files kept in ${dryRunDir}; nothing to tear down`);
