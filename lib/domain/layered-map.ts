/**
 * An immutable map that shares most of itself with the map it was made from: a large `base`,
 * never changed once built, and a small `top` of the entries set since. A new version copies
 * only the top; once the top outgrows about the square root of the base, the two are merged into
 * a new base. Setting entries one version after another then costs O(√n) each (amortized), where
 * copying a `Map` costs O(n): 3–5 ms for 10,000 entries on the development machine.
 *
 * It reads as a `ReadonlyMap`, in the same order: a key keeps the place it was first set at, as a
 * `Map`'s does. Entries are never deleted (the folds that use it only add and replace).
 */
export class LayeredMap<K, V> implements ReadonlyMap<K, V> {
  private constructor(
    private readonly base: ReadonlyMap<K, V>,
    private readonly top: ReadonlyMap<K, V>,
    readonly size: number,
  ) {}

  static empty<K, V>(): LayeredMap<K, V> {
    return new LayeredMap<K, V>(new Map(), new Map(), 0);
  }

  /** The entries of `map`, as a layered map (itself when it is one already). */
  static from<K, V>(map: ReadonlyMap<K, V>): LayeredMap<K, V> {
    if (map instanceof LayeredMap) return map as LayeredMap<K, V>;
    const base = new Map(map);
    return new LayeredMap<K, V>(base, new Map(), base.size);
  }

  /** A new version with each of `changes` set; this one is left as it is. */
  withAll(changes: ReadonlyMap<K, V>): LayeredMap<K, V> {
    if (changes.size === 0) return this;
    const top = new Map(this.top);
    let size = this.size;
    for (const [key, value] of changes) {
      if (!top.has(key) && !this.base.has(key)) size += 1;
      top.set(key, value);
    }
    if (top.size <= 16 + 2 * Math.sqrt(this.base.size)) return new LayeredMap(this.base, top, size);
    const merged = new Map(this.base);
    for (const [key, value] of top) merged.set(key, value);
    return new LayeredMap<K, V>(merged, new Map(), size);
  }

  get(key: K): V | undefined {
    return this.top.has(key) ? this.top.get(key) : this.base.get(key);
  }

  has(key: K): boolean {
    return this.top.has(key) || this.base.has(key);
  }

  *entries(): MapIterator<[K, V]> {
    for (const [key, value] of this.base) yield [key, this.top.has(key) ? (this.top.get(key) as V) : value];
    for (const [key, value] of this.top) if (!this.base.has(key)) yield [key, value];
  }

  *keys(): MapIterator<K> {
    for (const [key] of this.entries()) yield key;
  }

  *values(): MapIterator<V> {
    for (const [, value] of this.entries()) yield value;
  }

  forEach(callback: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    for (const [key, value] of this.entries()) callback.call(thisArg, value, key, this);
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }
}
