//! The checks of a graph whose references all resolve and form no cycle,
//! in upstream's order: each node alone, each referrer's devices (count,
//! kind), each device used once, like devices under arrays and pairs
//! (kind, size, partition type), verity data and hash alike, an ESP on
//! RAID mirrored.

use std::collections::BTreeMap;

use super::error::{GraphError, kinds_text, level_name, role_hint};
use super::node::{Node, NodeData, ReferrerKind, Role};
use super::rules::{self, TypeRule};
use crate::config::{PartitionSize, PartitionType, RaidLevel};

/// A partition some content lands on, with the reference key that leads there.
struct Part<'a> {
    id: &'a str,
    partition_type: &'a PartitionType,
    size: PartitionSize,
    key: &'a str,
}

/// A checked view: the nodes and, per node, the node index of each reference.
pub(super) struct Checked<'a> {
    pub nodes: &'a [Node],
    pub edges: &'a [Vec<usize>],
}

impl Checked<'_> {
    /// Runs every check.
    pub fn all(&self) -> Result<(), GraphError> {
        self.each_node()?;
        self.unique_fields()?;
        self.targets()?;
        self.sharing()?;
        self.kind_homogeneity()?;
        self.partition_sizes()?;
        self.partition_types()?;
        self.verity_pairs()?;
        self.esp_raid_levels()
    }

    fn referrers(&self) -> impl Iterator<Item = (usize, &Node, ReferrerKind)> {
        self.nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| n.referrer_kind().map(|k| (i, n, k)))
    }

    fn each_node(&self) -> Result<(), GraphError> {
        for node in self.nodes {
            match &node.data {
                NodeData::AdoptedPartition {
                    match_label,
                    match_uuid,
                    ..
                } if match_label.is_some() == match_uuid.is_some() => {
                    return Err(GraphError::AdoptedPartitionMatch {
                        key: node.key.clone(),
                    });
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Names the kernel or the firmware sees: one per array, volume, verity
    /// device; an adopted partition's match is one partition.
    fn unique_fields(&self) -> Result<(), GraphError> {
        let mut seen: BTreeMap<(&str, &str), String> = BTreeMap::new();
        for node in self.nodes {
            let fields: Vec<(&'static str, &str, Option<&String>)> = match &node.data {
                NodeData::RaidArray { name, .. } => vec![("name", "name", Some(name))],
                NodeData::EncryptedVolume { device_name } => {
                    vec![("deviceName", "device name", Some(device_name))]
                }
                NodeData::VerityDevice { name } => vec![("name", "verity name", Some(name))],
                NodeData::AdoptedPartition {
                    match_label,
                    match_uuid,
                    ..
                } => vec![
                    ("matchLabel", "matchLabel", match_label.as_ref()),
                    ("matchUuid", "matchUuid", match_uuid.as_ref()),
                ],
                _ => Vec::new(),
            };
            for (key, field, value) in fields {
                let Some(value) = value else { continue };
                let key = format!("{}.{key}", node.key);
                if let Some(first) = seen.get(&(field, value.as_str())) {
                    return Err(GraphError::DuplicateField {
                        key,
                        field,
                        value: value.clone(),
                        first: first.clone(),
                    });
                }
                seen.insert((field, value.as_str()), key);
            }
        }
        Ok(())
    }

    /// Each referrer: no device twice, the right count, compatible kinds.
    fn targets(&self) -> Result<(), GraphError> {
        for (i, node, referrer) in self.referrers() {
            let refs = &node.references;
            for (r, reference) in refs.iter().enumerate() {
                if let Some(earlier) = refs[..r].iter().find(|e| e.target == reference.target) {
                    return Err(GraphError::DuplicateTarget {
                        key: reference.key.clone(),
                        target: reference.target.clone(),
                        role: earlier.role.name(),
                        referrer,
                        hint: role_hint(reference.role, referrer),
                    });
                }
            }
            let count = rules::valid_target_count(referrer);
            if !count.allows(refs.len()) {
                return Err(GraphError::TargetCount {
                    key: references_key(node),
                    referrer,
                    expected: count.text(),
                    found: refs.len(),
                });
            }
            let allowed = rules::compatible_kinds(referrer);
            for (reference, &t) in refs.iter().zip(&self.edges[i]) {
                let Some(kind) = self.nodes[t].device_kind() else {
                    continue;
                };
                if !allowed.contains(&kind) {
                    return Err(GraphError::IncompatibleKind {
                        key: reference.key.clone(),
                        target: reference.target.clone(),
                        target_kind: kind,
                        referrer,
                        allowed: kinds_text(allowed),
                    });
                }
            }
        }
        Ok(())
    }

    /// Upstream lets no two referrers share a device.
    fn sharing(&self) -> Result<(), GraphError> {
        let mut used: BTreeMap<usize, (&str, &NodeData)> = BTreeMap::new();
        for (i, node) in self.nodes.iter().enumerate() {
            for (reference, &t) in node.references.iter().zip(&self.edges[i]) {
                if let Some((first, first_data)) = used.get(&t) {
                    let hint = match first_data {
                        NodeData::AbVolume => " (it is a volume of that A/B pair: use the pair id)",
                        _ => "",
                    };
                    return Err(GraphError::SharedDevice {
                        key: reference.key.clone(),
                        target: reference.target.clone(),
                        first: (*first).to_owned(),
                        hint,
                    });
                }
                used.insert(t, (&reference.key, &node.data));
            }
        }
        Ok(())
    }

    fn kind_homogeneity(&self) -> Result<(), GraphError> {
        for (i, node, referrer) in self.referrers() {
            if !rules::homogeneous_kinds(referrer) {
                continue;
            }
            let mut targets = node.references.iter().zip(&self.edges[i]);
            let Some((first_ref, &first)) = targets.next() else {
                continue;
            };
            let first_kind = self.nodes[first].device_kind();
            for (reference, &t) in targets {
                let kind = self.nodes[t].device_kind();
                if let (Some(kind), Some(first_kind)) = (kind, first_kind)
                    && kind != first_kind
                {
                    return Err(GraphError::MixedKinds {
                        key: reference.key.clone(),
                        target: reference.target.clone(),
                        target_kind: kind,
                        first: first_ref.target.clone(),
                        first_kind,
                        referrer,
                    });
                }
            }
        }
        Ok(())
    }

    /// The partitions a node's content lands on: itself for a partition,
    /// through arrays, pairs and volumes, and through a verity device's
    /// data (not its hash), each with the reference key `via` that leads there.
    fn partitions_under<'a>(&'a self, at: usize, via: &'a str, out: &mut Vec<Part<'a>>) {
        let node = &self.nodes[at];
        match &node.data {
            NodeData::Partition {
                partition_type,
                size,
                ..
            } => out.push(Part {
                id: node.label(),
                partition_type,
                size: *size,
                key: via,
            }),
            NodeData::Disk { .. } | NodeData::AdoptedPartition { .. } => {}
            _ => {
                for (reference, &t) in node.references.iter().zip(&self.edges[at]) {
                    if reference.role != Role::VerityHash {
                        self.partitions_under(t, via, out);
                    }
                }
            }
        }
    }

    /// The partitions under node `i`, through each of its references but
    /// a verity hash.
    fn partitions_of(&self, i: usize) -> Vec<Part<'_>> {
        self.partitions_by_role(i, |role| role != Role::VerityHash)
    }

    fn partitions_by_role(&self, i: usize, role: impl Fn(Role) -> bool) -> Vec<Part<'_>> {
        let mut out = Vec::new();
        for (reference, &t) in self.nodes[i].references.iter().zip(&self.edges[i]) {
            if role(reference.role) {
                self.partitions_under(t, &reference.key, &mut out);
            }
        }
        out
    }

    /// Arrays and pairs: every partition under them has the same fixed size.
    fn partition_sizes(&self) -> Result<(), GraphError> {
        for (i, _, referrer) in self.referrers() {
            if !rules::homogeneous_sizes(referrer) {
                continue;
            }
            let parts = self.partitions_of(i);
            for part in &parts {
                if part.size == PartitionSize::Grow {
                    return Err(GraphError::SizeNotFixed {
                        key: part.key.to_owned(),
                        partition: part.id.to_owned(),
                        referrer,
                    });
                }
            }
            if let Some(first) = parts.first()
                && let Some(part) = parts.iter().find(|p| p.size != first.size)
            {
                return Err(GraphError::SizeMismatch {
                    key: part.key.to_owned(),
                    partition: part.id.to_owned(),
                    size: part.size.to_string(),
                    first: first.id.to_owned(),
                    first_size: first.size.to_string(),
                });
            }
        }
        Ok(())
    }

    fn partition_types(&self) -> Result<(), GraphError> {
        for (i, node, referrer) in self.referrers() {
            let parts = self.partitions_of(i);
            if rules::homogeneous_types(referrer) {
                self.same_type(&parts)?;
            }
            let rule = rules::allowed_partition_types(referrer);
            self.types_allowed(&parts, &rule, referrer.name())?;
            for reference in &node.references {
                let Some(rule) = rules::verity_role_types(reference.role) else {
                    continue;
                };
                let under = self.partitions_by_role(i, |r| r == reference.role);
                self.same_type(&under)?;
                self.types_allowed(&under, &rule, reference.role.name())?;
            }
        }
        Ok(())
    }

    fn same_type(&self, parts: &[Part<'_>]) -> Result<(), GraphError> {
        let Some(first) = parts.first() else {
            return Ok(());
        };
        match parts
            .iter()
            .find(|p| p.partition_type != first.partition_type)
        {
            Some(part) => Err(GraphError::TypeMismatch {
                key: part.key.to_owned(),
                partition: part.id.to_owned(),
                partition_type: part.partition_type.name().to_owned(),
                first: first.id.to_owned(),
                first_type: first.partition_type.name().to_owned(),
            }),
            None => Ok(()),
        }
    }

    fn types_allowed(
        &self,
        parts: &[Part<'_>],
        rule: &TypeRule,
        what: &str,
    ) -> Result<(), GraphError> {
        match parts.iter().find(|p| !rule.allows(p.partition_type)) {
            Some(part) => Err(GraphError::PartitionTypeNotAllowed {
                key: part.key.to_owned(),
                partition: part.id.to_owned(),
                partition_type: part.partition_type.name().to_owned(),
                what: what.to_owned(),
                allowed: rule.text(),
            }),
            None => Ok(()),
        }
    }

    /// A verity device's hash partition type goes with its data's.
    fn verity_pairs(&self) -> Result<(), GraphError> {
        for (i, _, referrer) in self.referrers() {
            if referrer != ReferrerKind::VerityDevice {
                continue;
            }
            let data = self.partitions_by_role(i, |r| r == Role::VerityData);
            let hash = self.partitions_by_role(i, |r| r == Role::VerityHash);
            let (Some(data), Some(hash)) = (data.first(), hash.first()) else {
                continue;
            };
            if let Some(expected) = rules::verity_hash_type(data.partition_type)
                && *hash.partition_type != expected
            {
                return Err(GraphError::VerityHashType {
                    key: hash.key.to_owned(),
                    hash: hash.id.to_owned(),
                    hash_type: hash.partition_type.name().to_owned(),
                    data_type: data.partition_type.name().to_owned(),
                    expected: expected.name().to_owned(),
                });
            }
        }
        Ok(())
    }

    /// The firmware reads an ESP on RAID as a plain partition: only a
    /// mirror (raid1) looks like one.
    fn esp_raid_levels(&self) -> Result<(), GraphError> {
        for (i, node, referrer) in self.referrers() {
            if referrer != ReferrerKind::FilesystemEsp {
                continue;
            }
            for (reference, &t) in node.references.iter().zip(&self.edges[i]) {
                if let NodeData::RaidArray { level, .. } = self.nodes[t].data
                    && level != RaidLevel::Raid1
                {
                    return Err(GraphError::EspRaidLevel {
                        key: reference.key.clone(),
                        raid: reference.target.clone(),
                        level: level_name(level),
                    });
                }
            }
        }
        Ok(())
    }
}

/// The key of a referrer's list of devices.
fn references_key(node: &Node) -> String {
    match node.data {
        NodeData::RaidArray { .. } => format!("{}.devices", node.key),
        NodeData::EncryptedVolume { .. } | NodeData::Filesystem { .. } | NodeData::Swap => {
            format!("{}.deviceId", node.key)
        }
        _ => node.key.clone(),
    }
}
