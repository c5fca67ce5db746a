import { LRUCache } from 'lru-cache';
import type { CacheStats } from '../../lib/observability/metrics';
import { projectFiles, type ProjectFilesReader, type ProjectMediaEntry } from '../../lib/read-models/projects';

/** Files kept by default, over every project: some 100 MB of entries. */
const KEPT_FILES = 200_000;
/** A project with fewer files is read each time: 500 files read in about 2 ms. */
const KEPT_FROM = 500;

type Kept = { readonly filesRev: number; readonly files: readonly ProjectMediaEntry[] };

/**
 * The files of large projects, kept for as long as their project's `files_rev` stays the same:
 * a project of 10,000 files is some 10,000 documents to read and parse (37 ms, bench (h)), where
 * its own document is one. Views, compositions, publications move the project's document, not its
 * files, so the detail, the project page and the exports read a large project's files once per
 * change of them.
 *
 * Why it is right: the files are written before the document (`DocParts`), so the files read after
 * a document whose `files_rev` is R hold every file event up to it, and no file event lies between
 * R and that document's revision. The kept files may be ahead of a later reader's document (as a
 * read of the store may be), never behind it.
 *
 * At most `maxFiles` files over every project, the least recently read dropped first.
 */
export function keptProjectFiles(options: { maxFiles?: number; keptFrom?: number } = {}) {
  const keptFrom = options.keptFrom ?? KEPT_FROM;
  const kept = new LRUCache<string, Kept>({
    maxSize: options.maxFiles ?? KEPT_FILES,
    sizeCalculation: (k) => Math.max(1, k.files.length),
  });
  let hits = 0;
  let misses = 0;
  const read: ProjectFilesReader = async (queries, project) => {
    const hit = project.files_rev === null ? undefined : kept.get(project.id);
    if (hit && hit.filesRev === project.files_rev) {
      hits += 1;
      return hit.files;
    }
    const files = Object.freeze(await projectFiles(queries, project.id));
    if (project.files_rev === null || files.length < keptFrom) {
      kept.delete(project.id);
      return files;
    }
    misses += 1;
    kept.set(project.id, { filesRev: project.files_rev, files });
    return files;
  };
  return {
    read,
    /** Reads of a large project's files answered from those kept, and reads that kept them anew. */
    stats: (): CacheStats => ({ entries: kept.size, hits, misses }),
  };
}
