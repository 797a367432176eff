import type { InitConfig } from "../../config/types.js";
import type { Release } from "../../config/release.js";
import type { KeySource } from "../../pki/key-source.js";
import type { ClusterAccess } from "../../kube/types.js";
import type { PatchDirReader } from "../../manifests/patches.js";
import type { Host } from "../../remote/host.js";

/**
 * What `init` phases may read: the defaulted configuration, the target release and the host.
 * Phases never see CLI flags or action inputs (DESIGN.md "A phase reads a narrow data interface").
 * In a dry run `host` is a DryRunHost: node files land in the dry-run folder and commands
 * that change the machine are reported, not run.
 */
export interface InitData {
  readonly cfg: InitConfig;
  readonly release: Release;
  readonly host: Host;
  /** The cluster's API as this run reaches it; in a dry run, a recorder printing every write. */
  readonly api: ClusterAccess;
  /**
   * Where results for the user go (the join commands): stdout, or the log in a dry run, whose
   * stdout carries only the API objects.
   */
  readonly output: (text: string) => void;
  readonly dryRun: boolean;
  /** Folder with kubeadm-style patch files (`--patches`, `InitConfiguration.patches.directory`). */
  readonly patchesDir: string | undefined;
  /**
   * Files of the machine kubeforge runs on, where patch files are read: input like the
   * --config file, outside any dry-run or --rootfs folder, whichever node the phases target.
   */
  readonly runnerFiles: PatchDirReader;
  /** Lower-cased check names from --ignore-preflight-errors and nodeRegistration; may hold "all". */
  readonly ignorePreflightErrors: ReadonlySet<string>;
  readonly uploadCerts: boolean;
  /** Hex AES-256 key for upload-certs; generated when absent and uploadCerts is set. */
  readonly certificateKey: string | undefined;
  readonly skipTokenPrint: boolean;
  readonly skipCertificateKeyPrint: boolean;
  /** Proxy variables of kubeforge's environment, copied into the static pods as kubeadm does. */
  readonly proxyEnv: Readonly<Record<string, string>>;
  /** New private keys, generated in parallel ahead of need (see KeySource). */
  readonly keys: KeySource;
  /** The clock every certificate and token is dated by. */
  now(): Date;
  /**
   * false: the admin client is admin.conf as it is (a joining control plane's view: kubeadm
   * join's data.Client(); init made the binding). Default: it first makes sure admin.conf's
   * kubeadm:cluster-admins ClusterRoleBinding exists, as init does.
   */
  readonly ensureAdminBinding?: boolean;
  /**
   * true: the phases re-apply objects the cluster already has (an upgrade's view): their writes
   * update first (ApiCallOptions.updateFirst). Default: they create first, as init finds none.
   */
  readonly objectsExist?: boolean;
}
