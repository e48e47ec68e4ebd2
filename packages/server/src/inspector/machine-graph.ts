/**
 * The dataset machine reduced to what the inspector page draws: its top-level states (with their
 * substates) and one arrow per pair of top-level states that some transition of the definition
 * connects, labelled with the events that take it. Built from the resolved state-node tree rather
 * than `toJSON()`, because the JSON form leaves out eventless (`always`) transitions, which are
 * how a check ends (`polling.metadataUnchanged` → `serving`, and every other outcome state).
 */
import { datasetMachine } from '@ferry/core/machine';

/** The parts of an XState state node the graph reads (`machine.root` fits). */
export interface StateNodeLike {
  readonly key: string;
  readonly type: string;
  readonly states: Readonly<Record<string, StateNodeLike>>;
  readonly transitions: ReadonlyMap<string, readonly TransitionLike[]>;
  readonly always?: readonly TransitionLike[] | undefined;
  readonly parent?: StateNodeLike | undefined;
}

interface TransitionLike {
  readonly target?: readonly StateNodeLike[] | undefined;
}

export interface GraphState {
  readonly key: string;
  /** Child state keys, in definition order. */
  readonly substates: readonly string[];
  readonly final: boolean;
}

export interface GraphTrigger {
  /** The event type as the machine sees it (`poll.now`, `xstate.done.actor.readMetadata`, `always`). */
  readonly event: string;
  /** A short human label (`poll.now`, `readMetadata done`, `timer`, `auto`). */
  readonly label: string;
  /** The substate the transition leaves from, when it is not the top-level state itself. */
  readonly from?: string;
}

export interface GraphEdge {
  readonly from: string;
  readonly to: string;
  readonly triggers: readonly GraphTrigger[];
}

export interface MachineGraph {
  readonly id: string;
  /** Top-level states in definition order. */
  readonly states: readonly GraphState[];
  /** Transitions between two different top-level states, merged per (from, to). */
  readonly edges: readonly GraphEdge[];
  /** Transitions defined on the machine itself (taken from any state), e.g. `stop` → `stopped`. */
  readonly global: readonly { readonly event: string; readonly to: string }[];
}

/** A short label for an event type. */
export function eventLabel(event: string): string {
  if (event === 'always') return 'auto';
  if (event === 'poll.due' || event.startsWith('xstate.after.')) return 'timer';
  const done = /^xstate\.done\.actor\.(.+)$/.exec(event);
  if (done !== null) return `${done[1]} done`;
  const failed = /^xstate\.error\.actor\.(.+)$/.exec(event);
  if (failed !== null) return `${failed[1]} failed`;
  if (event === 'snapshot.announced') return 'announced';
  return event;
}

/** The top-level ancestor of `node` under `root` (undefined for the root itself). */
function topLevelOf(node: StateNodeLike, root: StateNodeLike): StateNodeLike | undefined {
  let current: StateNodeLike | undefined = node;
  while (current !== undefined && current.parent !== root) current = current.parent;
  return current;
}

function transitionsOf(node: StateNodeLike): [string, TransitionLike][] {
  const list: [string, TransitionLike][] = [];
  for (const [event, transitions] of node.transitions) {
    for (const transition of transitions) list.push([event, transition]);
  }
  for (const transition of node.always ?? []) list.push(['always', transition]);
  return list;
}

/** The drawable graph of a machine whose root is `root`. */
export function machineGraph(root: StateNodeLike, id = root.key): MachineGraph {
  const tops = Object.values(root.states);
  const edges = new Map<string, { from: string; to: string; triggers: GraphTrigger[] }>();
  const global: { event: string; to: string }[] = [];

  for (const [event, transition] of transitionsOf(root)) {
    for (const target of transition.target ?? []) {
      const to = topLevelOf(target, root);
      if (to !== undefined) global.push({ event, to: to.key });
    }
  }

  const visit = (node: StateNodeLike, top: StateNodeLike): void => {
    for (const [event, transition] of transitionsOf(node)) {
      for (const target of transition.target ?? []) {
        const to = topLevelOf(target, root);
        if (to === undefined || to === top) continue;
        const key = `${top.key}->${to.key}`;
        const edge = edges.get(key) ?? { from: top.key, to: to.key, triggers: [] };
        edges.set(key, edge);
        const from = node === top ? undefined : node.key;
        if (!edge.triggers.some((trigger) => trigger.event === event && trigger.from === from)) {
          edge.triggers.push({ event, label: eventLabel(event), ...(from === undefined ? {} : { from }) });
        }
      }
    }
    for (const child of Object.values(node.states)) visit(child, top);
  };
  for (const top of tops) visit(top, top);

  return {
    id,
    states: tops.map((node) => ({
      key: node.key,
      substates: Object.keys(node.states),
      final: node.type === 'final',
    })),
    edges: [...edges.values()],
    global,
  };
}

let cached: MachineGraph | undefined;

/** The graph of Ferry's dataset machine (computed once). */
export function datasetMachineGraph(): MachineGraph {
  cached ??= machineGraph(datasetMachine.root, datasetMachine.id);
  return cached;
}
