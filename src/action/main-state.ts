// What the main step saves for the post step about the hosts (core.saveState: plain files,
// so node names only, never an address with credentials or an error text). The post step needs
// it to tell a host the main step changed and the post step cannot reach (left behind) from one
// the main step never reached (nothing of this run's on it), and not to spend another round of
// connection retries on a host the main step already found unreachable.

/** State names. */
export const REACHED_STATE = "hosts-reached";
export const UNREACHABLE_STATE = "hosts-unreachable";

/** Node names as saved: comma-separated (node names are DNS subdomains: no commas). */
export function formatNodeNames(names: Iterable<string>): string {
  return [...names].join(",");
}

export function parseNodeNames(text: string): Set<string> {
  return new Set(text.split(",").filter((n) => n !== ""));
}

/** Records each node the main step connected to, or could not, as the connections settle. */
export class HostRecord {
  readonly reached = new Set<string>();
  readonly unreachable = new Set<string>();

  constructor(private readonly save: (name: string, value: string) => void) {}

  /** Wraps a connect function: each outcome is saved as soon as it is known. */
  track<N extends { name: string }, H>(connect: (node: N) => Promise<H>) {
    return async (node: N): Promise<H> => {
      try {
        const host = await connect(node);
        this.reached.add(node.name);
        this.save(REACHED_STATE, formatNodeNames(this.reached));
        return host;
      } catch (e) {
        this.unreachable.add(node.name);
        this.save(UNREACHABLE_STATE, formatNodeNames(this.unreachable));
        throw e;
      }
    };
  }
}
