// {{name}}: a placement plugin for wasq (topology-aware scheduling).
//
// Describe here what the policy does and how it differs from Kueue's default. As generated, it
// places a podSet that asks for no particular topology in the emptiest domain of the level
// above the leaves (racks, say) that holds all of it — the most room first, where Kueue takes
// the least free capacity first — and a podSet that asks for a level in the tightest domain of
// that level that holds it (Kueue's first step); a preferred level falls back to the levels
// above, then to the fewest top-level domains. Slices, slice layers and a podSet group's
// leader are kept as the host requires (`request.tree.fill`).
//
// The policy places every request itself: the contract has no "Kueue's placement" answer, and
// `noFit(message)` keeps the workload pending with that message. (A refused answer or an
// exception makes the host place it with Kueue's BestFit, but counts as a failure.)

import { exportPlacement, noFit, placed } from '../sdk-js/index.js';

export class Policy {
  /**
   * @param {import('../sdk-js/index.js').Catalog} catalog
   * @param {import('../sdk-js/index.js').PlacementRequest} request
   */
  place(catalog, request) {
    const { tree, constraint, count } = request;
    /** @param {readonly number[]} domains @param {boolean} roomiest */
    const firstThatHolds = (domains, roomiest) => {
      const sorted = domains.slice().sort((a, b) => (roomiest ? tree.capacity(b) - tree.capacity(a) : tree.capacity(a) - tree.capacity(b)) || a - b);
      for (const d of sorted) {
        const p = tree.fill(d, count);
        if (p) return placed(p.pods, p.leader);
      }
      return undefined;
    };
    const levels =
      constraint.mode === 'unconstrained'
        ? [Math.max(0, tree.lowest - 1)]
        : constraint.mode === 'required'
          ? [constraint.level]
          : Array.from({ length: constraint.level + 1 }, (_, i) => constraint.level - i);
    for (const level of levels) {
      const answer = firstThatHolds(tree.atLevel(level), constraint.mode === 'unconstrained');
      if (answer) return answer;
    }
    if (constraint.mode !== 'required') {
      // Across the topology: the top-level domains with the most room first.
      const top = tree.atLevel(0).slice().sort((a, b) => tree.capacity(b) - tree.capacity(a) || a - b);
      const p = tree.fill(top, count);
      if (p) return placed(p.pods, p.leader);
    }
    return noFit(`${count} pods do not fit in one ${request.levelNames[constraint.level]} domain of topology ${request.topology}`);
  }
}

export const placement = exportPlacement(new Policy());
