// The instance's string table (`types.new-strings` in wit/types.wit): namespaces, job kinds,
// apiVersions and names, label and annotation keys and values, placement's topology, level
// and resource names cross once per table and are named by `string-id` afterwards.

/**
 * The strings the host sent, by id.
 *
 * Protocol: string `first + k` is `values[k]`; `first == 0` starts a new table (every string
 * held is dropped first). A `first` past the table's end leaves the ids between unsent, and one
 * inside it replaces the strings from `first` on; the host does neither. An id never sent
 * reads as `''`, never as an error.
 *
 * The table is an array replaced (not changed) whenever an id could change meaning (a restart
 * or an overlap), and only appended to otherwise; so a view that took {@link StringTable#values}
 * keeps reading the strings of its own call even after the table starts again.
 */
export class StringTable {
  /** @type {string[]} */
  #values = [];

  /** How many strings the table holds (including unsent ids below the last one sent). */
  get size() {
    return this.#values.length;
  }

  /**
   * The strings by id, as of now: views resolve ids through this array.
   * @returns {readonly string[]}
   */
  get values() {
    return this.#values;
  }

  /**
   * Adds the strings a call sent (`new-strings`); `undefined` adds nothing.
   * @param {import('wasq:policy/types@1.1.0').NewStrings | undefined} added
   */
  add(added) {
    if (added === undefined || added === null) return;
    const first = added.first >>> 0;
    let values = this.#values;
    if (first === 0 || first < values.length) {
      values = values.slice(0, first);
    }
    while (values.length < first) values.push('');
    for (const value of added.values) values.push(String(value));
    this.#values = values;
  }

  /**
   * The string `id` names; `''` for an id the host never sent.
   * @param {number} id
   * @returns {string}
   */
  get(id) {
    return resolve(this.#values, id);
  }
}

/**
 * `values[id]`, or `''` when there is no such string.
 * @param {readonly string[]} values
 * @param {number} id
 * @returns {string}
 */
export function resolve(values, id) {
  const value = values[id];
  return value === undefined ? '' : value;
}
