/**
 * SearchIndex: the words behind GET /search (DESIGN §3). One entry per thing a drive holds
 * (project, folder, media, composition), found by its name or, for media, its transcript.
 * Its own port rather than filters on the ReadStore (STYLE §14): word matching, ranking and
 * snippets are what text engines do, and a growing filter language would only imitate them.
 *
 * Semantics every adapter shares (the contract suite in test/contract checks them):
 * - A search sees the query's drive only, whatever ids, names or words other drives hold.
 * - Text is cut into words (runs of letters and digits; punctuation and `_` separate) and
 *   compared case-insensitively and without diacritics ("CAFÉ" finds "cafe"). Every word of the
 *   query must occur (AND); a part in double quotes is a phrase: its words in order and adjacent.
 *   A word matches whole words only, no prefixes, no stemming, no stop words, so that both
 *   engines agree ("interview" does not find "interviews").
 * - The query text is data, never engine syntax: `OR`, `NEAR(`, `*`, `-`, `:`, `$where`, stray or
 *   unbalanced quotes are plain words or separators. A query with no word in it finds nothing.
 * - The whole query must match within one field: an entry whose name has one word and whose
 *   transcript has the other is not found. `matched` says which field; `name` wins when both do.
 * - `upsert` replaces an entry by id (old words are no longer found); `remove` ignores unknown ids.
 */

export type SearchKind = 'project' | 'project_folder' | 'media' | 'composition';
export type SearchMediaType = 'audio' | 'video' | 'image' | 'sequence' | 'other';
/** What `types` selects: a kind, or media of one media type. */
export type SearchType = 'project' | 'project_folder' | 'audio' | 'video' | 'image' | 'composition';
export type SearchField = 'name' | 'content';
export type SearchSort = 'relevance' | 'newest' | 'oldest';

export type SearchEntry = {
  /** Unique across drives, chosen by the caller: "project:<uuid>", "media:<project>:<ref>". */
  readonly id: string;
  readonly drive_id: string;
  readonly kind: SearchKind;
  /** Project name, folder name, media display path or reference, composition name. */
  readonly name: string;
  /** Transcript text (media): may be long, a one-hour transcript is about 10,000 words. */
  readonly content?: string;
  /** Media only; media without one counts as `other`. */
  readonly media_type?: SearchMediaType;
  readonly project_id?: string;
  readonly asset_id?: string;
  readonly composition_id?: string;
  readonly duration?: number | null;
  /** ISO 8601 in UTC as `Date.toISOString()` writes it, so that strings order chronologically. */
  readonly updated_at: string;
};

export type SearchQuery = {
  readonly drive_id: string;
  /** What the user typed; a part in double quotes is a phrase. */
  readonly text: string;
  /** Absent or empty: every kind, media of every type included. */
  readonly types?: readonly SearchType[];
  /** Absent or empty: both. */
  readonly match?: readonly SearchField[];
  /** Exclusive bounds on `updated_at`; any string `Date` parses, else `invalid_input`. */
  readonly updated_after?: string;
  readonly updated_before?: string;
  /**
   * `relevance`: an entry whose name equals the query (ignoring case, diacritics, surrounding
   * spaces and double quotes) first when names are searched; then the engine's relevance with
   * a name match weighing more than a transcript match; ties by `updated_at` newest first, then
   * `id`. `newest` / `oldest`: by `updated_at`, ties by `id` ascending.
   */
  readonly sort: SearchSort;
  /** An integer 1..100, else `invalid_input`. */
  readonly limit: number;
};

export type SearchHit = {
  /** The entry as upserted, without `content`. */
  readonly entry: Omit<SearchEntry, 'content'>;
  readonly matched: SearchField;
  /**
   * Content hits only: about 15 words of the transcript around the first match, HTML-escaped,
   * each matched word wrapped in `<mark>` and `</mark>`, and `…` where the text was cut. Safe to
   * put in a page as it is.
   */
  readonly snippet?: string;
};

export interface SearchIndex {
  /** Adds or replaces entries by id, in one transaction where the engine has them. */
  upsert(entries: readonly SearchEntry[]): Promise<void>;
  /** Removes entries by id; unknown ids are ignored. */
  remove(ids: readonly string[]): Promise<void>;
  /**
   * At most `limit` hits in the order `sort` defines, the same order for the same data. Rejects
   * with `invalid_input` for a limit, sort or bound out of range, or more than 64 words.
   */
  search(query: SearchQuery): Promise<SearchHit[]>;
  /** Removes every entry of every drive (replay). */
  clear(): Promise<void>;
  /** Makes every upsert and removal acknowledged so far survive a power cut (see `ReadStore.flush`). */
  flush(): Promise<void>;
  close(): Promise<void>;
}
