/**
 * The host's catalog of the SQL namespace: every configured dataset, its file format, its query
 * limits and the generation it serves now, and the spicepod's views. Dataset threads announce generations; the host numbers
 * them (unique in the process, so a restarted thread's links never alias an earlier attachment),
 * versions the catalog, and hands each version to the query pools: pushed to the DuckDB workers,
 * and carried by every SQLite task as a version plus the catalog encoded once in a
 * SharedArrayBuffer (workers that block between tasks decode it only when the version moved).
 *
 * It also remembers the generations each dataset served before (as many as the snapshot pool keeps
 * linked), so a query pinned to an earlier snapshot (`X-Ferry-Snapshot`) reads that generation's
 * link for as long as it exists (`held`).
 */
import { statSync } from 'node:fs';
import { MAX_RETAIN_SNAPSHOTS, type Retention } from '@ferry/core/base';
import type { NamespaceCatalog, NamespaceDataset, NamespaceGeneration, NamespaceView } from '@ferry/engines';
import { type GenerationFile, generationFile, heldGenerations } from '@ferry/snapshots/generations';
import type { AnnouncedGeneration } from '../common/protocol.js';
import type { DatasetEntry, DatasetRegistry } from '../host/dataset-registry.js';
import { type SharedCatalog, shareCatalog } from './catalog-board.js';

/** Generations remembered per dataset (current included), newest first: as many as may be held. */
const REMEMBERED = MAX_RETAIN_SNAPSHOTS;

export class QueryCatalog {
  readonly #registry: DatasetRegistry;
  readonly #onChange: (catalog: NamespaceCatalog) => void;
  /** What each dataset serves now: its generation (as the catalog has it), and its file format. */
  readonly #generations = new Map<
    string,
    { readonly generation: NamespaceGeneration; readonly engine: AnnouncedGeneration['engine'] }
  >();
  /** Each dataset's generations as announced, newest first (current included), at most {@link REMEMBERED}. */
  readonly #announced = new Map<string, NamespaceGeneration[]>();
  #nextGeneration = 0;
  #version = 0;
  #current: NamespaceCatalog | undefined;
  #shared: SharedCatalog | undefined;

  readonly #views: readonly NamespaceView[];
  readonly #taskHistory: boolean;

  constructor(
    registry: DatasetRegistry,
    onChange: (catalog: NamespaceCatalog) => void,
    views: readonly NamespaceView[],
    taskHistory: boolean,
  ) {
    this.#registry = registry;
    this.#onChange = onChange;
    this.#views = views;
    this.#taskHistory = taskHistory;
  }

  /** The spicepod's views. */
  get views(): readonly NamespaceView[] {
    return this.#views;
  }

  /** A dataset thread announced what it serves now (`null`: nothing). */
  announce(entry: DatasetEntry, current: AnnouncedGeneration | null): void {
    if (current === null) this.#generations.delete(entry.name);
    else {
      const generation = {
        id: ++this.#nextGeneration,
        path: current.path,
        snapshotId: current.snapshotId,
        ...(current.schema === undefined ? {} : { schema: current.schema }),
      };
      this.#generations.set(entry.name, { generation, engine: current.engine });
      const announced = this.#announced.get(entry.name) ?? [];
      this.#announced.set(entry.name, [generation, ...announced].slice(0, REMEMBERED));
    }
    this.#changed();
  }

  /**
   * The generations of `name` this process holds for reads, newest first, one per snapshot, as
   * `retention` says (`ferry_retain_snapshots`, `ferry_retain_disk_budget`: the rule the snapshot
   * pool prunes by): the current one, and earlier ones whose link still exists.
   */
  held(name: string, retention: Retention): readonly NamespaceGeneration[] {
    const current = this.#generations.get(name)?.generation;
    const generations: NamespaceGeneration[] = [];
    const files: GenerationFile[] = [];
    const snapshots = new Set<number>();
    for (const generation of this.#announced.get(name) ?? []) {
      // Past `retain` snapshots the rule holds none: no need to look at their files (a pinned
      // query asks this each time).
      if (snapshots.size >= retention.retain && !snapshots.has(generation.snapshotId)) break;
      const isCurrent = generation.id === current?.id;
      const stats = statSync(generation.path, { throwIfNoEntry: false });
      // The current one is held even while its link is being made again (a restore).
      if (stats === undefined && !isCurrent) continue;
      snapshots.add(generation.snapshotId);
      generations.push(generation);
      files.push(generationFile(generation.snapshotId, stats ?? { ino: -1, blocks: 0 }));
    }
    return heldGenerations(files, retention).map((index) => generations[index] as NamespaceGeneration);
  }

  /** The dataset's thread is gone: it serves nothing until its next thread announces. */
  withdraw(entry: DatasetEntry): void {
    if (this.#generations.delete(entry.name)) this.#changed();
  }

  #changed(): void {
    this.#version++;
    this.#current = undefined;
    this.#shared = undefined;
    this.#onChange(this.current());
  }

  /** The snapshot a dataset serves now, as announced; undefined while it serves none. */
  snapshotOf(name: string): number | undefined {
    return this.#generations.get(name)?.generation.snapshotId;
  }

  /** The file format of a dataset's snapshots: configured, else the one its generation has. */
  engineOf(entry: DatasetEntry): NamespaceDataset['engine'] {
    return entry.config?.fileEngine ?? this.#generations.get(entry.name)?.engine;
  }

  current(): NamespaceCatalog {
    this.#current ??= {
      version: this.#version,
      ...(this.#views.length === 0 ? {} : { views: this.#views }),
      ...(this.#taskHistory ? {} : { taskHistory: false }),
      datasets: [...this.#registry.entries()].map((entry): NamespaceDataset => {
        const limits = entry.config?.queryLimits;
        return {
          name: entry.name,
          engine: this.engineOf(entry),
          generation: this.#generations.get(entry.name)?.generation ?? null,
          ...(limits?.memoryLimitBytes === undefined ? {} : { memoryLimitBytes: limits.memoryLimitBytes }),
          ...(limits?.threads === undefined ? {} : { threads: limits.threads }),
        };
      }),
    };
    return this.#current;
  }

  shared(): SharedCatalog {
    this.#shared ??= shareCatalog(this.current());
    return this.#shared;
  }
}
