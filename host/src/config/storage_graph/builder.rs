//! From a Host Configuration to the nodes of the graph, each with the key
//! path it is written at, in document order: disks and their partitions,
//! RAID arrays, encrypted volumes, verity devices, A/B volume pairs,
//! filesystems, swap. Then the structure: ids unique, every reference
//! resolved, no cycle.

use std::collections::BTreeMap;

use super::error::GraphError;
use super::node::{Node, NodeData, Reference, Role};
use crate::config::{HostConfiguration, OverrideEspMount};

/// Where the ESP is mounted unless `overrideEspMount` says otherwise.
pub const ESP_MOUNT_POINT: &str = "/boot/efi";

fn reference(target: &str, role: Role, key: String) -> Reference {
    Reference {
        target: target.to_owned(),
        role,
        key,
    }
}

fn device(id: &str, key: String, data: NodeData, references: Vec<Reference>) -> Node {
    Node {
        id: Some(id.to_owned()),
        key,
        data,
        references,
    }
}

/// Every node of `hc`'s storage, in document order.
pub(super) fn nodes_of(hc: &HostConfiguration) -> Vec<Node> {
    let storage = &hc.storage;
    let mut nodes = Vec::new();
    for (d, disk) in storage.disks.iter().enumerate() {
        let base = format!("storage.disks[{d}]");
        let data = NodeData::Disk {
            device: disk.device.clone(),
        };
        nodes.push(device(&disk.id, base.clone(), data, Vec::new()));
        for (p, part) in disk.partitions.iter().enumerate() {
            let data = NodeData::Partition {
                disk_id: disk.id.clone(),
                partition_type: part.partition_type.clone(),
                size: part.size,
            };
            nodes.push(device(
                &part.id,
                format!("{base}.partitions[{p}]"),
                data,
                Vec::new(),
            ));
        }
        for (p, adopted) in disk.adopted_partitions.iter().enumerate() {
            let data = NodeData::AdoptedPartition {
                disk_id: disk.id.clone(),
                match_label: adopted.match_label.clone(),
                match_uuid: adopted.match_uuid.clone(),
            };
            let key = format!("{base}.adoptedPartitions[{p}]");
            nodes.push(device(&adopted.id, key, data, Vec::new()));
        }
    }
    for (i, raid) in storage.raid.software.iter().enumerate() {
        let key = format!("storage.raid.software[{i}]");
        let members = raid
            .devices
            .iter()
            .enumerate()
            .map(|(j, m)| reference(m, Role::Device, format!("{key}.devices[{j}]")))
            .collect();
        let data = NodeData::RaidArray {
            name: raid.name.clone(),
            level: raid.level,
        };
        nodes.push(device(&raid.id, key, data, members));
    }
    let encrypted = storage.encryption.iter().flat_map(|e| &e.volumes);
    for (i, volume) in encrypted.enumerate() {
        let key = format!("storage.encryption.volumes[{i}]");
        let under = vec![reference(
            &volume.device_id,
            Role::Device,
            format!("{key}.deviceId"),
        )];
        let data = NodeData::EncryptedVolume {
            device_name: volume.device_name.clone(),
        };
        nodes.push(device(&volume.id, key, data, under));
    }
    for (i, verity) in storage.verity.iter().enumerate() {
        let key = format!("storage.verity[{i}]");
        let under = vec![
            reference(
                &verity.data_device_id,
                Role::VerityData,
                format!("{key}.dataDeviceId"),
            ),
            reference(
                &verity.hash_device_id,
                Role::VerityHash,
                format!("{key}.hashDeviceId"),
            ),
        ];
        let data = NodeData::VerityDevice {
            name: verity.name.clone(),
        };
        nodes.push(device(&verity.id, key, data, under));
    }
    for (i, pair) in hc.volume_pairs().iter().enumerate() {
        let key = format!("storage.abUpdate.volumePairs[{i}]");
        let under = vec![
            reference(&pair.volume_a_id, Role::VolumeA, format!("{key}.volumeAId")),
            reference(&pair.volume_b_id, Role::VolumeB, format!("{key}.volumeBId")),
        ];
        nodes.push(device(&pair.id, key, NodeData::AbVolume, under));
    }
    for (i, fs) in storage.filesystems.iter().enumerate() {
        let key = format!("storage.filesystems[{i}]");
        let path = fs.mount_point.path();
        let esp = match fs.override_esp_mount {
            OverrideEspMount::UseDefault => path == ESP_MOUNT_POINT,
            OverrideEspMount::Override => true,
            OverrideEspMount::Block => false,
        };
        let under = (!fs.device_id.is_empty())
            .then(|| reference(&fs.device_id, Role::Device, format!("{key}.deviceId")))
            .into_iter()
            .collect();
        let data = NodeData::Filesystem {
            mount_point: path.to_owned(),
            source: fs.effective_source(),
            fs_type: fs.fs_type,
            esp,
        };
        nodes.push(Node {
            id: None,
            key,
            data,
            references: under,
        });
    }
    for (i, swap) in storage.swap.iter().enumerate() {
        let key = format!("storage.swap[{i}]");
        let under = vec![reference(
            &swap.device_id,
            Role::Device,
            format!("{key}.deviceId"),
        )];
        nodes.push(Node {
            id: None,
            key,
            data: NodeData::Swap,
            references: under,
        });
    }
    nodes
}

/// Device id → node index; fails on an empty or repeated id (all device
/// ids share one namespace).
pub(super) fn index_ids(nodes: &[Node]) -> Result<BTreeMap<String, usize>, GraphError> {
    let mut index = BTreeMap::new();
    for (i, node) in nodes.iter().enumerate() {
        let Some(id) = &node.id else { continue };
        let key = format!("{}.id", node.key);
        if id.is_empty() {
            return Err(GraphError::EmptyId { key });
        }
        if let Some(&first) = index.get(id) {
            let first: &Node = &nodes[first];
            return Err(GraphError::DuplicateId {
                key,
                id: id.clone(),
                first: format!("{}.id", first.key),
            });
        }
        index.insert(id.clone(), i);
    }
    Ok(index)
}

/// Resolves every reference to a node index (in the order written).
pub(super) fn resolve(
    nodes: &[Node],
    index: &BTreeMap<String, usize>,
) -> Result<Vec<Vec<usize>>, GraphError> {
    nodes
        .iter()
        .map(|node| {
            node.references
                .iter()
                .map(|r| {
                    index
                        .get(&r.target)
                        .copied()
                        .ok_or_else(|| GraphError::UnknownReference {
                            key: r.key.clone(),
                            target: r.target.clone(),
                        })
                })
                .collect()
        })
        .collect()
}

/// Fails when following references from some node leads back to it,
/// naming the cycle (`a -> b -> a`) at the reference that closes it.
pub(super) fn check_acyclic(nodes: &[Node], edges: &[Vec<usize>]) -> Result<(), GraphError> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    fn visit(
        at: usize,
        nodes: &[Node],
        edges: &[Vec<usize>],
        marks: &mut [Mark],
        path: &mut Vec<usize>,
    ) -> Result<(), GraphError> {
        marks[at] = Mark::OnPath;
        path.push(at);
        for (r, &next) in edges[at].iter().enumerate() {
            match marks[next] {
                Mark::OnPath => {
                    let start = path.iter().position(|&n| n == next).unwrap_or(0);
                    let mut names: Vec<&str> =
                        path[start..].iter().map(|&n| nodes[n].label()).collect();
                    names.push(nodes[next].label());
                    return Err(GraphError::Cycle {
                        key: nodes[at].references[r].key.clone(),
                        cycle: names.join(" -> "),
                    });
                }
                Mark::New => visit(next, nodes, edges, marks, path)?,
                Mark::Done => {}
            }
        }
        path.pop();
        marks[at] = Mark::Done;
        Ok(())
    }
    let mut marks = vec![Mark::New; nodes.len()];
    for start in 0..nodes.len() {
        if marks[start] == Mark::New {
            visit(start, nodes, edges, &mut marks, &mut Vec::new())?;
        }
    }
    Ok(())
}
