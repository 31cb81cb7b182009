//! Interned names: resources, flavors, and the dense flavor-resource index used by every quota vector.

use rustc_hash::FxHashMap as HashMap;

/// An interned resource name (`cpu`, `memory`, `nvidia.com/gpu`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceId(pub u32);

impl ResourceId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// An interned ResourceFlavor name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlavorId(pub u32);

/// A dense index of one (flavor, resource) pair that some quota mentions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FrIdx(pub u32);

impl FrIdx {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Amounts per flavor-resource, sorted by [`FrIdx`], each index at most once: a workload's
/// usage. Inline up to four entries (no heap allocation for the usual one or two resources).
pub type FrAmounts = smallvec::SmallVec<[(FrIdx, i64); 4]>;

/// Adds `v` to `fr`'s amount in a sorted [`FrAmounts`], inserting it in order when absent.
pub fn add_amount(list: &mut FrAmounts, fr: FrIdx, v: i64) {
    match list.binary_search_by_key(&fr, |&(k, _)| k) {
        Ok(i) => list[i].1 += v,
        Err(i) => list.insert(i, (fr, v)),
    }
}

/// `fr`'s amount in a sorted [`FrAmounts`] (0 when absent).
pub fn amount_of(list: &[(FrIdx, i64)], fr: FrIdx) -> i64 {
    list.binary_search_by_key(&fr, |&(k, _)| k)
        .map_or(0, |i| list[i].1)
}

/// Interns names once so that quota math works on small integers.
#[derive(Debug, Clone, Default)]
pub struct Names {
    resources: Vec<String>,
    resource_ids: HashMap<String, ResourceId>,
    flavors: Vec<String>,
    flavor_ids: HashMap<String, FlavorId>,
    frs: Vec<(FlavorId, ResourceId)>,
    fr_ids: HashMap<(FlavorId, ResourceId), FrIdx>,
    /// `pods` once interned (flavor assignment asks for it per head).
    pods: Option<ResourceId>,
    /// PodSet names, each distinct one once: every workload's podSets and admissions share
    /// them, where an allocation per workload was a cache line of its own that each admission
    /// touched (to share it) and each logged admission read (BENCHMARKS.md, stop 47).
    pod_set_names: rustc_hash::FxHashSet<std::sync::Arc<str>>,
}

impl Names {
    /// The shared text of a podSet name.
    pub fn pod_set_name(&mut self, name: &str) -> std::sync::Arc<str> {
        if let Some(shared) = self.pod_set_names.get(name) {
            return shared.clone();
        }
        let shared: std::sync::Arc<str> = name.into();
        self.pod_set_names.insert(shared.clone());
        shared
    }

    pub fn resource(&mut self, name: &str) -> ResourceId {
        if let Some(&id) = self.resource_ids.get(name) {
            return id;
        }
        let id = ResourceId(self.resources.len() as u32);
        self.resources.push(name.to_string());
        self.resource_ids.insert(name.to_string(), id);
        if name == "pods" {
            self.pods = Some(id);
        }
        id
    }

    pub fn flavor(&mut self, name: &str) -> FlavorId {
        if let Some(&id) = self.flavor_ids.get(name) {
            return id;
        }
        let id = FlavorId(self.flavors.len() as u32);
        self.flavors.push(name.to_string());
        self.flavor_ids.insert(name.to_string(), id);
        id
    }

    pub fn fr(&mut self, flavor: FlavorId, resource: ResourceId) -> FrIdx {
        if let Some(&id) = self.fr_ids.get(&(flavor, resource)) {
            return id;
        }
        let id = FrIdx(self.frs.len() as u32);
        self.frs.push((flavor, resource));
        self.fr_ids.insert((flavor, resource), id);
        id
    }

    /// Resources interned so far.
    pub fn n_resources(&self) -> usize {
        self.resources.len()
    }

    /// The `pods` resource, when some quota or request names it.
    pub fn pods(&self) -> Option<ResourceId> {
        self.pods
    }

    pub fn find_resource(&self, name: &str) -> Option<ResourceId> {
        self.resource_ids.get(name).copied()
    }

    pub fn find_flavor(&self, name: &str) -> Option<FlavorId> {
        self.flavor_ids.get(name).copied()
    }

    pub fn find_fr(&self, flavor: FlavorId, resource: ResourceId) -> Option<FrIdx> {
        self.fr_ids.get(&(flavor, resource)).copied()
    }

    pub fn resource_name(&self, id: ResourceId) -> &str {
        &self.resources[id.0 as usize]
    }

    pub fn flavor_name(&self, id: FlavorId) -> &str {
        &self.flavors[id.0 as usize]
    }

    pub fn fr_parts(&self, fr: FrIdx) -> (FlavorId, ResourceId) {
        self.frs[fr.index()]
    }

    pub fn n_fr(&self) -> usize {
        self.frs.len()
    }

    pub fn resources(&self) -> impl Iterator<Item = (ResourceId, &str)> {
        self.resources
            .iter()
            .enumerate()
            .map(|(i, n)| (ResourceId(i as u32), n.as_str()))
    }

    pub fn flavors(&self) -> impl Iterator<Item = (FlavorId, &str)> {
        self.flavors
            .iter()
            .enumerate()
            .map(|(i, n)| (FlavorId(i as u32), n.as_str()))
    }
}
