//! The storage of a Host Configuration as a graph of block devices, the
//! way upstream models it (microsoft/trident `storage_graph`): disks →
//! partitions (and adopted partitions) → RAID arrays → encrypted volumes →
//! verity devices → filesystems and swap, with A/B volume pairs over any
//! of them. Built and checked once ([`StorageGraph::build`]): ids unique,
//! every reference resolved, no cycle, then upstream's rules of which
//! device may sit on which ([`rules`]). Each violation is a [`GraphError`]
//! naming its key path.
//!
//! Layout: `node` (kinds, nodes, references), `builder` (nodes from the
//! configuration, ids, references, cycles), `rules` (the tables),
//! `checks` (the rules applied), `error`.

mod builder;
mod checks;
mod error;
mod node;
pub mod rules;

use std::collections::BTreeMap;

pub use builder::ESP_MOUNT_POINT;
pub use error::GraphError;
pub use node::{DeviceKind, Node, NodeData, Reference, ReferrerKind, Role};

use crate::config::HostConfiguration;

/// The checked graph of block devices of one Host Configuration.
#[derive(Debug, Clone)]
pub struct StorageGraph {
    nodes: Vec<Node>,
    /// Per node, the node index of each of its references (same order).
    edges: Vec<Vec<usize>>,
    /// Device id → node index.
    index: BTreeMap<String, usize>,
}

impl StorageGraph {
    /// Builds the graph of `hc`'s storage and checks every rule.
    pub fn build(hc: &HostConfiguration) -> Result<StorageGraph, GraphError> {
        let nodes = builder::nodes_of(hc);
        let index = builder::index_ids(&nodes)?;
        let edges = builder::resolve(&nodes, &index)?;
        builder::check_acyclic(&nodes, &edges)?;
        checks::Checked {
            nodes: &nodes,
            edges: &edges,
        }
        .all()?;
        Ok(StorageGraph {
            nodes,
            edges,
            index,
        })
    }

    /// Every node, in document order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The device of id `id`.
    pub fn device(&self, id: &str) -> Option<&Node> {
        self.index.get(id).map(|&i| &self.nodes[i])
    }

    /// What `node` sits on: each reference with the node it names.
    pub fn targets<'a>(&'a self, node: &'a Node) -> Vec<(&'a Reference, &'a Node)> {
        let Some(i) = self.nodes.iter().position(|n| std::ptr::eq(n, node)) else {
            return Vec::new();
        };
        node.references
            .iter()
            .zip(&self.edges[i])
            .map(|(r, &t)| (r, &self.nodes[t]))
            .collect()
    }

    /// What sits on device `id` (at most one referrer: devices are not shared).
    pub fn referrer_of(&self, id: &str) -> Option<&Node> {
        let &target = self.index.get(id)?;
        let i = self.edges.iter().position(|e| e.contains(&target))?;
        Some(&self.nodes[i])
    }

    /// Volumes A and B of the A/B volume pair `id`.
    pub fn ab_pair(&self, id: &str) -> Option<(&Node, &Node)> {
        let pair = self.device(id)?;
        let targets = self.targets(pair);
        let side = |role| targets.iter().find(|(r, _)| r.role == role).map(|t| t.1);
        Some((side(Role::VolumeA)?, side(Role::VolumeB)?))
    }

    /// The filesystems, in document order.
    pub fn filesystems(&self) -> impl Iterator<Item = &Node> {
        self.nodes
            .iter()
            .filter(|n| matches!(n.data, NodeData::Filesystem { .. }))
    }
}

#[cfg(test)]
mod tests;
