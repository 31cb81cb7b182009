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
export declare class StringTable {
    #private;
    /** How many strings the table holds (including unsent ids below the last one sent). */
    get size(): number;
    /**
     * The strings by id, as of now: views resolve ids through this array.
     * @returns {readonly string[]}
     */
    get values(): readonly string[];
    /**
     * Adds the strings a call sent (`new-strings`); `undefined` adds nothing.
     * @param {import('wasq:policy/types@1.1.0').NewStrings | undefined} added
     */
    add(added: import('wasq:policy/types@1.1.0').NewStrings | undefined): void;
    /**
     * The string `id` names; `''` for an id the host never sent.
     * @param {number} id
     * @returns {string}
     */
    get(id: number): string;
}
/**
 * `values[id]`, or `''` when there is no such string.
 * @param {readonly string[]} values
 * @param {number} id
 * @returns {string}
 */
export declare function resolve(values: readonly string[], id: number): string;
