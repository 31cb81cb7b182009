// {{name}}: a MultiKueue dispatch plugin for wasq: which worker clusters get a copy of a
// workload.
//
// Describe here what the policy does and how it differs from Kueue's default. As generated, a
// workload labelled `wasq.dev/region` is copied only to the connected clusters whose
// MultiKueueCluster carries the same value under the label named by the `clusterLabel`
// setting (default `region`); any other workload, or one whose region no connected cluster
// serves, is dispatched as Kueue's all-at-once dispatcher does (every connected cluster).

import { allAtOnce, exportDispatch, Only } from '../sdk-js/index.js';

export class Policy {
  /** The MultiKueueCluster label that names a cluster's region. */
  clusterLabel = 'region';

  /** @param {import('../sdk-js/index.js').Settings} settings */
  settingsChanged(settings) {
    this.clusterLabel = settings.get('clusterLabel') ?? 'region';
  }

  /**
   * @param {import('../sdk-js/index.js').Settings} settings
   * @param {import('../sdk-js/index.js').DispatchRequest} request
   */
  dispatch(settings, request) {
    const region = request.workload.label('wasq.dev/region');
    if (region !== undefined) {
      const answer = allAtOnce(new Only(request, (c) => c.label(this.clusterLabel) === region));
      if (answer.nominate.length > 0) return answer;
    }
    // Kueue's answer (`incremental(request, request, step)` is its other dispatcher).
    return allAtOnce(request);
  }
}

export const dispatch = exportDispatch(new Policy());
