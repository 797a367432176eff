// How reset tells what it does. kubeadm's reset prints "[reset] Deleting contents of ..." as it
// goes and, with --dry-run, "[reset] Would delete contents of ..." instead
// (cmd/phases/reset/cleanupnode.go and removeetcdmember.go, v1.35). The choice is made once,
// with the rest of the dry run's data; phases only say which change they make.

/** The changes reset tells about, with their verb forms. */
const VERBS = {
  stop: { doing: "Stopping", done: "Stopped", would: "Would stop" },
  unmount: { doing: "Unmounting", done: "Unmounted", would: "Would unmount" },
  delete: { doing: "Deleting", done: "Deleted", would: "Would delete" },
  "stop and delete": {
    doing: "Stopping and deleting",
    done: "Stopped and deleted",
    would: "Would stop and delete",
  },
  remove: { doing: "Removing", done: "Removed", would: "Would remove" },
} as const;

export type ResetVerb = keyof typeof VERBS;

export interface ResetWording {
  /** Said before a change: "[reset] Deleting X"; a dry run says "[reset] Would delete X". */
  before(verb: ResetVerb, what: string): string;
  /**
   * Said before a change kubeadm tells of only once made: nothing in a run; a dry run, which
   * makes nothing, says "[reset] Would delete X" here.
   */
  beforeDone(verb: ResetVerb, what: string): string | undefined;
  /** Said once a change is made: "[reset] Deleted X"; nothing in a dry run, which said it before. */
  after(verb: ResetVerb, what: string): string | undefined;
}

export const RUN_WORDING: ResetWording = {
  before: (verb, what) => `[reset] ${VERBS[verb].doing} ${what}`,
  beforeDone: () => undefined,
  after: (verb, what) => `[reset] ${VERBS[verb].done} ${what}`,
};

export const DRY_RUN_WORDING: ResetWording = {
  before: (verb, what) => `[reset] ${VERBS[verb].would} ${what}`,
  beforeDone: (verb, what) => `[reset] ${VERBS[verb].would} ${what}`,
  after: () => undefined,
};

/** Prints a line the wording may leave out. */
export function tell(log: { info(line: string): void }, line: string | undefined): void {
  if (line !== undefined) log.info(line);
}
