//! The current curve, the stored points, and the partition of the points into the cells of
//! the curve (spec §2), kept up to date as the curve changes.
//!
//! Every stored point x keeps its current squared distance d_cur(x) and its cell (the part of
//! the curve nearest to it, [`crate::geometry::Part`]), so that a candidate curve is scored
//! from the few points whose distance can change (`super::evaluate`). Cells are named by
//! stable vertex identities rather than by indices, so that inserting a vertex does not
//! renumber the cells of the rest of the curve. Two indexes find points fast:
//!
//! - `members`: the stored points of each cell, in increasing round, so that N_t (the points
//!   of U(x)) and the points of the cells a candidate modifies are listed without a scan;
//! - a uniform grid over the stored points (cells of side 4δ), each grid cell with an upper
//!   bound on √d_cur of its points, for the ball queries of the incremental evaluation.
//!
//! Lists are kept in increasing round, and the grid is a `BTreeMap`, so every traversal is a
//! function of the stored points and the curve alone: a learner restored from a snapshot
//! (where these indexes are rebuilt, not stored) visits the points in the same order and
//! computes the same bits.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::lattice::Lattice;
use crate::geometry::{Part, squared_distance};

/// A cell of the partition, by the stable identities of its vertices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum CellKey {
    Vertex(u64),
    Segment(u64, u64),
}

/// The grid side, in lattice spacings.
const GRID_SPACINGS: f64 = 4.0;

/// A cell of the grid: its points (by round, increasing) and an upper bound on their √d_cur.
#[derive(Clone, Debug, Default)]
struct GridCell {
    rounds: Vec<u64>,
    reach: f64,
}

/// The curve and the stored points, with the partition and its indexes.
#[derive(Clone, Debug)]
pub(crate) struct CurveState {
    pub(crate) lattice: Lattice,
    pub(crate) dim: usize,
    /// Integer lattice coordinates of the vertices, row-major.
    pub(crate) keys: Vec<i64>,
    /// Internal coordinates δ·key of the vertices, row-major.
    pub(crate) vertices: Vec<f64>,
    /// ‖v_{i+1} − v_i‖² of each segment.
    pub(crate) lengths2: Vec<f64>,
    /// Stable identity of each vertex (names the cells).
    ids: Vec<u64>,
    next_id: u64,
    index_of: HashMap<u64, usize>,
    /// Stored points, internal coordinates, row-major; the first `dead` are evicted.
    coords: Vec<f64>,
    explored: Vec<bool>,
    distance: Vec<f64>,
    cell: Vec<CellKey>,
    /// The round of stored point 0 (stored point i is the point of round first_round + i).
    first_round: u64,
    dead: usize,
    members: HashMap<CellKey, Vec<u64>>,
    grid: BTreeMap<Vec<i64>, GridCell>,
    grid_side: f64,
    max_reach: f64,
}

/// What a snapshot keeps: the indexes are rebuilt.
#[derive(Serialize)]
pub(crate) struct CurveStateRef<'a> {
    lattice: &'a Lattice,
    keys: &'a [i64],
    /// The round of the first stored point.
    first_round: u64,
    coords: &'a [f64],
    explored: &'a [bool],
}

/// A snapshot read back.
#[derive(Deserialize)]
pub(crate) struct CurveStateOwned {
    lattice: Lattice,
    keys: Vec<i64>,
    first_round: u64,
    coords: Vec<f64>,
    explored: Vec<bool>,
}

impl Serialize for CurveState {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        CurveStateRef {
            lattice: &self.lattice,
            keys: &self.keys,
            first_round: self.first_round + self.dead as u64,
            coords: &self.coords[self.dead * self.dim..],
            explored: &self.explored[self.dead..],
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for CurveState {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let owned = CurveStateOwned::deserialize(deserializer)?;
        let dim = owned.lattice.dim();
        let invalid = |what: &str| D::Error::custom(format!("principal curve: {what}"));
        let radius = owned.lattice.radius();
        let spacing = owned.lattice.spacing();
        if dim == 0
            || !(radius.is_finite() && radius > 0.0)
            || !(spacing.is_finite() && spacing > 0.0 && spacing <= radius)
            || owned.lattice.origin().iter().any(|v| !v.is_finite())
        {
            return Err(invalid("the lattice is out of range"));
        }
        if owned.keys.len() % dim != 0 || owned.keys.len() < 2 * dim {
            return Err(invalid(
                "the curve needs two vertices of the lattice's dimension",
            ));
        }
        let limit = 2.0 * owned.lattice.ball_radius() / spacing + 2.0;
        if owned.keys.iter().any(|k| (k.unsigned_abs() as f64) > limit)
            || owned
                .keys
                .chunks_exact(dim)
                .any(|key| !owned.lattice.contains(key))
            || owned
                .keys
                .chunks_exact(dim)
                .zip(owned.keys.chunks_exact(dim).skip(1))
                .any(|(a, b)| a == b)
        {
            return Err(invalid(
                "the curve's vertices must be distinct consecutive points of the lattice",
            ));
        }
        if owned.coords.len() != owned.explored.len() * dim
            || owned.coords.iter().any(|v| !v.is_finite())
            || owned.first_round == 0
        {
            return Err(invalid("the stored points are inconsistent"));
        }
        Ok(CurveState::new(
            owned.lattice,
            owned.keys,
            owned.first_round,
            owned.coords,
            owned.explored,
        ))
    }
}

impl CurveState {
    /// The state for a curve (`keys`) and stored points (internal coordinates, the first of
    /// round `first_round`).
    pub(crate) fn new(
        lattice: Lattice,
        keys: Vec<i64>,
        first_round: u64,
        coords: Vec<f64>,
        explored: Vec<bool>,
    ) -> Self {
        let dim = lattice.dim();
        let n_vertices = keys.len() / dim;
        let grid_side = GRID_SPACINGS * lattice.spacing();
        let mut state = Self {
            lattice,
            dim,
            keys,
            vertices: Vec::new(),
            lengths2: Vec::new(),
            ids: (0..n_vertices as u64).collect(),
            next_id: n_vertices as u64,
            index_of: HashMap::new(),
            coords: Vec::new(),
            explored: Vec::new(),
            distance: Vec::new(),
            cell: Vec::new(),
            first_round,
            dead: 0,
            members: HashMap::new(),
            grid: BTreeMap::new(),
            grid_side,
            max_reach: 0.0,
        };
        state.refresh_vertices();
        for (point, explored) in coords.chunks_exact(dim).zip(explored) {
            state.push(point, explored);
        }
        state
    }

    fn refresh_vertices(&mut self) {
        self.vertices = vec![0.0; self.keys.len()];
        for (key, vertex) in self
            .keys
            .chunks_exact(self.dim)
            .zip(self.vertices.chunks_exact_mut(self.dim))
        {
            self.lattice.position(key, vertex);
        }
        self.lengths2 = (0..self.n_segments())
            .map(|i| squared_distance(self.vertex(i), self.vertex(i + 1)))
            .collect();
        self.index_of = self
            .ids
            .iter()
            .enumerate()
            .map(|(i, &id)| (id, i))
            .collect();
    }

    /// The nearest part of the curve to `point` and the squared distance, by the formulas
    /// of [`interior`] (the first part along the curve on a tie).
    pub(crate) fn nearest(&self, point: &[f64]) -> (Part, f64) {
        let mut best = (Part::Vertex(0), squared_distance(point, self.vertex(0)));
        let mut to_a = best.1;
        for i in 0..self.n_segments() {
            let to_b = squared_distance(point, self.vertex(i + 1));
            if let Some(d) = interior(to_a, to_b, self.lengths2[i]) {
                if d < best.1 {
                    best = (Part::Segment(i), d);
                }
            }
            if to_b < best.1 {
                best = (Part::Vertex(i + 1), to_b);
            }
            to_a = to_b;
        }
        best
    }

    /// The number of segments k.
    pub(crate) fn n_segments(&self) -> usize {
        self.keys.len() / self.dim - 1
    }

    /// Vertex `i`, internal coordinates.
    pub(crate) fn vertex(&self, i: usize) -> &[f64] {
        &self.vertices[i * self.dim..(i + 1) * self.dim]
    }

    /// The key of vertex `i`.
    pub(crate) fn key(&self, i: usize) -> &[i64] {
        &self.keys[i * self.dim..(i + 1) * self.dim]
    }

    /// The length of the curve.
    pub(crate) fn length(&self) -> f64 {
        (0..self.n_segments())
            .map(|i| squared_distance(self.vertex(i), self.vertex(i + 1)).sqrt())
            .sum()
    }

    pub(crate) fn cell_key(&self, part: Part) -> CellKey {
        match part {
            Part::Vertex(i) => CellKey::Vertex(self.ids[i]),
            Part::Segment(i) => CellKey::Segment(self.ids[i], self.ids[i + 1]),
        }
    }

    pub(crate) fn part_of(&self, key: CellKey) -> Part {
        match key {
            CellKey::Vertex(id) => Part::Vertex(self.index_of[&id]),
            CellKey::Segment(id, _) => Part::Segment(self.index_of[&id]),
        }
    }

    // ----- stored points -----

    /// The number of stored points.
    pub(crate) fn n_points(&self) -> usize {
        self.explored.len() - self.dead
    }

    /// The round of the most recent stored point plus one.
    pub(crate) fn end_round(&self) -> u64 {
        self.first_round + self.explored.len() as u64
    }

    /// The round of the oldest stored point.
    pub(crate) fn oldest_round(&self) -> u64 {
        self.first_round + self.dead as u64
    }

    #[inline]
    pub(crate) fn index(&self, round: u64) -> usize {
        (round - self.first_round) as usize
    }

    #[inline]
    pub(crate) fn point(&self, index: usize) -> &[f64] {
        &self.coords[index * self.dim..(index + 1) * self.dim]
    }

    #[inline]
    pub(crate) fn distance(&self, index: usize) -> f64 {
        self.distance[index]
    }

    #[inline]
    pub(crate) fn explored(&self, index: usize) -> bool {
        self.explored[index]
    }

    #[inline]
    pub(crate) fn cell(&self, index: usize) -> CellKey {
        self.cell[index]
    }

    /// The live stored points' indices, oldest first.
    pub(crate) fn live(&self) -> std::ops::Range<usize> {
        self.dead..self.explored.len()
    }

    /// The stored points of a cell, by round.
    pub(crate) fn members(&self, key: CellKey) -> &[u64] {
        self.members.get(&key).map_or(&[], Vec::as_slice)
    }

    /// Stores a point (internal coordinates) with its cell and distance; returns them.
    pub(crate) fn push(&mut self, point: &[f64], explored: bool) -> (Part, f64) {
        let (part, distance) = self.nearest(point);
        let round = self.end_round();
        self.coords.extend_from_slice(point);
        self.explored.push(explored);
        self.distance.push(distance);
        let key = self.cell_key(part);
        self.cell.push(key);
        // The newest round: the end of every sorted list.
        self.members.entry(key).or_default().push(round);
        let grid_key = self.grid_key(point);
        let reach = distance.sqrt();
        let cell = self.grid.entry(grid_key).or_default();
        cell.rounds.push(round);
        cell.reach = cell.reach.max(reach);
        self.max_reach = self.max_reach.max(reach);
        (part, distance)
    }

    /// Forgets the oldest stored point.
    pub(crate) fn evict_oldest(&mut self) {
        let index = self.dead;
        let round = self.first_round + index as u64;
        let key = self.cell[index];
        if let Some(list) = self.members.get_mut(&key) {
            remove_sorted(list, round);
            if list.is_empty() {
                self.members.remove(&key);
            }
        }
        let grid_key = self.grid_key(self.point(index));
        if let Some(cell) = self.grid.get_mut(&grid_key) {
            remove_sorted(&mut cell.rounds, round);
            if cell.rounds.is_empty() {
                self.grid.remove(&grid_key);
            }
        }
        self.dead += 1;
        // Amortised O(1): drop the evicted prefix once it is as long as what remains.
        if self.dead >= 1024 && self.dead >= self.explored.len() / 2 {
            let dead = self.dead;
            self.coords.drain(..dead * self.dim);
            self.explored.drain(..dead);
            self.distance.drain(..dead);
            self.cell.drain(..dead);
            self.first_round += dead as u64;
            self.dead = 0;
        }
    }

    fn grid_key(&self, point: &[f64]) -> Vec<i64> {
        point
            .iter()
            .map(|v| (v / self.grid_side).floor() as i64)
            .collect()
    }

    /// Calls `visit(index)` for every stored point x with ‖x − centre‖ ≤ radius + √d_cur(x)
    /// (and possibly a few more: the test is conservative), grid cell by grid cell in key
    /// order, by round within a cell.
    pub(crate) fn for_each_reachable(
        &self,
        centre: &[f64],
        radius: f64,
        mut visit: impl FnMut(usize),
    ) {
        // A relative margin covers the rounding of the distances compared.
        let slack = |r: f64| r * (1.0 + 1e-9) + 1e-300;
        let side = self.grid_side;
        let dim = self.dim;
        let mut check_cell = |key: &[i64], cell: &GridCell| {
            let mut gap2 = 0.0;
            for (k, c) in key.iter().zip(centre) {
                let low = *k as f64 * side;
                let high = low + side;
                let gap = if *c < low {
                    low - c
                } else if *c > high {
                    c - high
                } else {
                    0.0
                };
                gap2 += gap * gap;
            }
            let reach = slack(radius + cell.reach);
            if gap2 > reach * reach {
                return;
            }
            for &round in &cell.rounds {
                let index = (round - self.first_round) as usize;
                let point = &self.coords[index * dim..(index + 1) * dim];
                let limit = slack(radius + self.distance[index].sqrt());
                if squared_distance(point, centre) <= limit * limit {
                    visit(index);
                }
            }
        };
        // Enumerate the box of grid cells that can hold such points when it is smaller than
        // the set of non-empty cells; otherwise test every non-empty cell.
        let span = slack(radius + self.max_reach);
        let low: Vec<i64> = centre
            .iter()
            .map(|c| ((c - span) / side).floor() as i64)
            .collect();
        let high: Vec<i64> = centre
            .iter()
            .map(|c| ((c + span) / side).floor() as i64)
            .collect();
        let mut box_cells: f64 = 1.0;
        for (l, h) in low.iter().zip(&high) {
            box_cells *= (h - l + 1) as f64;
        }
        if box_cells < self.grid.len() as f64 {
            let mut key = low.clone();
            loop {
                if let Some(cell) = self.grid.get(&key) {
                    check_cell(&key, cell);
                }
                // Odometer over the box, last coordinate fastest: key order.
                let mut axis = dim;
                loop {
                    if axis == 0 {
                        return;
                    }
                    axis -= 1;
                    if key[axis] < high[axis] {
                        key[axis] += 1;
                        break;
                    }
                    key[axis] = low[axis];
                }
            }
        } else {
            for (key, cell) in &self.grid {
                check_cell(key, cell);
            }
        }
    }

    // ----- curve changes -----

    /// Replaces vertices `first..=last` by `new_keys` (row-major) and gives every stored
    /// point in `updates` its new distance and part (parts of the *new* curve).
    pub(crate) fn replace(
        &mut self,
        first: usize,
        last: usize,
        new_keys: &[i64],
        updates: &[(usize, f64, Part)],
    ) {
        let dim = self.dim;
        let m = new_keys.len() / dim;
        let new_ids: Vec<u64> = (0..m as u64).map(|j| self.next_id + j).collect();
        self.next_id += m as u64;
        self.keys
            .splice(first * dim..(last + 1) * dim, new_keys.iter().copied());
        self.ids.splice(first..=last, new_ids);
        self.refresh_vertices();
        let mut touched_grid: Vec<Vec<i64>> = Vec::new();
        // Moves between cells, applied per cell in one pass each: a change can move half the
        // stored points, and one sorted insertion or removal at a time would be quadratic.
        let mut leaving: HashMap<CellKey, Vec<u64>> = HashMap::new();
        let mut arriving: HashMap<CellKey, Vec<u64>> = HashMap::new();
        for &(index, distance, part) in updates {
            let round = self.first_round + index as u64;
            let old = self.cell[index];
            let new = self.cell_key(part);
            if old != new {
                leaving.entry(old).or_default().push(round);
                arriving.entry(new).or_default().push(round);
                self.cell[index] = new;
            }
            if distance != self.distance[index] {
                self.distance[index] = distance;
                touched_grid.push(self.grid_key(self.point(index)));
            }
        }
        for (key, mut rounds) in leaving {
            rounds.sort_unstable();
            if let Some(list) = self.members.get_mut(&key) {
                // Both sorted: one merge-like pass.
                let mut gone = rounds.iter().peekable();
                list.retain(|round| {
                    while gone.peek().is_some_and(|g| **g < *round) {
                        gone.next();
                    }
                    gone.peek() != Some(&round)
                });
                if list.is_empty() {
                    self.members.remove(&key);
                }
            }
        }
        for (key, mut rounds) in arriving {
            rounds.sort_unstable();
            let list = self.members.entry(key).or_default();
            let old = std::mem::take(list);
            list.reserve(old.len() + rounds.len());
            let (mut a, mut b) = (old.into_iter().peekable(), rounds.into_iter().peekable());
            while let (Some(x), Some(y)) = (a.peek(), b.peek()) {
                if x < y {
                    list.extend(a.next());
                } else {
                    list.extend(b.next());
                }
            }
            list.extend(a);
            list.extend(b);
        }
        // Exact bounds for the grid cells whose points moved (the others stay upper bounds).
        touched_grid.sort_unstable();
        touched_grid.dedup();
        for key in touched_grid {
            if let Some(cell) = self.grid.get_mut(&key) {
                cell.reach = cell
                    .rounds
                    .iter()
                    .map(|&round| self.distance[(round - self.first_round) as usize].sqrt())
                    .fold(0.0, f64::max);
            }
        }
        self.max_reach = self.grid.values().map(|c| c.reach).fold(0.0, f64::max);
        // Cells of removed parts must be empty now.
        debug_assert!(self.members.keys().all(|key| match key {
            CellKey::Vertex(id) => self.index_of.contains_key(id),
            CellKey::Segment(a, b) => {
                self.index_of.contains_key(a)
                    && self.index_of.get(b) == self.index_of.get(a).map(|i| i + 1).as_ref()
            }
        }));
    }

    /// Recomputes every stored point's part and distance from scratch and compares them with
    /// the incremental ones (tests only).
    #[cfg(test)]
    pub(crate) fn check_partition(&self) -> Result<(), String> {
        for index in self.live() {
            let (part, distance) = self.nearest(self.point(index));
            let key = self.cell_key(part);
            if key != self.cell[index] || distance != self.distance[index] {
                return Err(format!(
                    "point {index}: fresh {part:?} {distance} incremental {:?} {}",
                    self.part_of(self.cell[index]),
                    self.distance[index]
                ));
            }
            if !self
                .members(key)
                .contains(&(self.first_round + index as u64))
            {
                return Err(format!("point {index} is missing from its cell's list"));
            }
        }
        if self
            .members
            .values()
            .any(|list| list.windows(2).any(|w| w[0] >= w[1]))
        {
            return Err("a cell's list is not in increasing round".to_string());
        }
        let listed: usize = self.members.values().map(Vec::len).sum();
        if listed != self.n_points() {
            return Err(format!("{listed} listed for {} points", self.n_points()));
        }
        Ok(())
    }
}

/// The squared distance from a point to the interior of a segment [a, b], from the squared
/// distances to its ends and its squared length (law of cosines: 2⟨x − a, b − a⟩ =
/// ‖x − a‖² + ‖b − a‖² − ‖x − b‖², and the distance is ‖x − a‖² − ⟨x − a, b − a⟩²/‖b − a‖²);
/// `None` when the nearest point of the segment is an end.
///
/// Every distance the learner computes to a segment goes through this formula, so that a
/// window's candidates are scored from one table of distances to the window's vertex pool
/// and still agree, bit for bit, with a fresh projection of the stored points. (It loses
/// relative accuracy for points much nearer to the segment than to its ends; the loss it
/// reports is then small in absolute terms. [`crate::geometry::Polyline`], which users
/// call, projects explicitly.)
#[inline]
pub(crate) fn interior(to_a: f64, to_b: f64, length2: f64) -> Option<f64> {
    let along2 = to_a + length2 - to_b;
    if !(along2 > 0.0 && along2 < 2.0 * length2) {
        return None;
    }
    let along = 0.5 * along2;
    Some((to_a - along * along / length2).max(0.0))
}

fn remove_sorted(list: &mut Vec<u64>, round: u64) {
    if let Ok(position) = list.binary_search(&round) {
        list.remove(position);
    }
}
