//! The current curve, the stored points, and the partition of the stored points into the
//! cells of the curve (spec §2), kept up to date as the curve changes.
//!
//! # Atoms: stored points merged by bins
//!
//! The learner does not score candidates point by point but *atom* by atom. An atom is a set
//! of stored points of one weight class (`Observation`) in one cube (bin) of side s,
//! summarised by its count n, its mean m and its scatter matrix C = Σ (x − m)(x − m)ᵀ
//! (updated as points arrive, in round order, by Welford's recurrence). The bins start at
//! s = b·δ (b the `bin_side` parameter, δ the lattice spacing); whenever the atoms outnumber
//! the budget (`max_atoms`), s doubles and the atoms of each new bin merge (counts, means
//! and scatters combine exactly), so the number of atoms, and with it the cost of a round,
//! stays bounded however long the stream: a long stream is summarised at a coarser
//! resolution, a short one (fewer points than the budget) keeps its points apart. Those are sufficient statistics for the loss of the atom on any
//! part of a curve:
//!
//! - on a vertex v: Σ ‖x − v‖² = n ‖m − v‖² + tr C, exactly;
//! - on the interior of a segment with unit direction u: Σ (‖x − a‖² − ⟨x − a, u⟩²) =
//!   n d(m, line)² + tr C − uᵀCu, exactly when every point of the atom projects inside the
//!   segment.
//!
//! So an atom behaves as one point (its mean, with weight n times its class weight) plus a
//! *spread* term: tr C on a vertex, tr C − uᵀCu on a segment. Its cell is the cell of its mean.
//! The approximation is in that assignment alone: an atom straddling the boundary of two
//! parts is charged as if all its points were on its mean's side. For a point x of an atom
//! of radius r assigned to part p while its nearest part is q, √Δ_p(x) ≤ √Δ_q(x) + 2r, so the
//! extra loss is at most 4r√Δ_q(x) + 4r², of the order of what the lattice itself costs (a
//! vertex snapped to Q_δ moves by up to √d δ/2). With b = 0 every point is its own atom and
//! scores are exact; window memory always keeps points apart (its cost is bounded anyway).
//!
//! Why bins: scoring a candidate over the points it may change costs time in proportion to
//! the number of those points, which grows like t with every point kept. Merging points of
//! one bin bounds the number of atoms by the volume the data cover over s^d, and the budget
//! bounds it outright. (No exact method can do much better: a candidate's score is a sum
//! over points on either side of curved boundaries, and exact range sums over such regions
//! cost a power of the number of points.)
//!
//! # Indexes
//!
//! Every atom keeps the squared distance d_cur of its mean to the curve and its cell (the
//! part of the curve nearest to its mean, [`crate::geometry::Part`]), so that a candidate is
//! scored from the few atoms whose distance can change (`super::evaluate`). Cells are named
//! by stable vertex identities rather than by indices, so that inserting a vertex does not
//! renumber the cells of the rest of the curve. Two indexes find atoms fast:
//!
//! - `members`: the atoms of each cell, in increasing atom id, so that N_t (the points of
//!   U(x)) and the atoms of the cells a candidate modifies are listed without a scan;
//! - a uniform grid over the atoms (cells of side about 4δ, a whole number of bins so that an
//!   atom's mean never leaves its grid cell), each grid cell with an upper bound on √d_cur of
//!   its atoms, for the ball queries of the incremental evaluation.
//!
//! # Determinism
//!
//! Atom ids are given in creation order, lists are kept in increasing id, and the grid is a
//! `BTreeMap`, so every traversal is a function of the stored points and the curve alone. A
//! snapshot keeps the stored points (not the atoms): restoring pushes them again in round
//! order, which rebuilds the same atoms (with all points kept, atoms are never removed; with
//! window memory, an atom is one point), merges them at the same pushes (the budget is
//! crossed at the same point of the sequence), and gives the same statistics bit for bit
//! and the same cells.

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

/// The grid side, in lattice spacings (rounded to a whole number of bins).
const GRID_SPACINGS: f64 = 4.0;

/// How a stored point was observed; it fixes the point's weight in the estimated rewards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Observation {
    /// Collected before the first curve: observed for certain.
    WarmUp = 0,
    /// Seen in an exploration round (or under full feedback).
    Explored = 1,
    /// Seen in an exploitation round of bandit feedback.
    Exploited = 2,
}

/// What the state needs from the learner's settings. Derived from the configuration, so
/// snapshots do not store it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct StateSettings {
    /// The weight of a point in the estimated cumulative rewards, by [`Observation`].
    pub(crate) weights: [f64; 3],
    /// The side of the bins in which points are merged at first (`None`: every point its
    /// own atom).
    pub(crate) bin_side: Option<f64>,
    /// When there are more atoms than this, the bins double in side and their atoms merge
    /// (0: no limit).
    pub(crate) max_atoms: usize,
    /// The last warm-up round (0 if none is stored).
    pub(crate) warmup_end: u64,
}

/// A cell of the grid: its atoms (by id, increasing) and an upper bound on their √d_cur.
#[derive(Clone, Debug, Default)]
struct GridCell {
    ids: Vec<u64>,
    reach: f64,
}

/// The atoms, by index (id − `first_id` − `dead`... see [`CurveState::atom_index`]).
#[derive(Clone, Debug, Default)]
struct Atoms {
    /// The id of atom 0 of these arrays.
    first_id: u64,
    /// The first `dead` atoms are evicted (window memory).
    dead: usize,
    mean: Vec<f64>,
    count: Vec<f64>,
    /// The weight of each point of the atom.
    weight: Vec<f64>,
    /// The scatter matrix, upper triangle row by row (binning only; empty otherwise).
    scatter: Vec<f64>,
    distance: Vec<f64>,
    cell: Vec<CellKey>,
    /// The spread term of the atom on its cell's part (binning only).
    spread: Vec<f64>,
    /// The grid cell of the atom (fixed while the bins keep their side).
    grid: Vec<i64>,
    /// The bin of the atom and its weight class, `None` for an atom of one point that no
    /// other point joins (outside the ball, or without binning).
    bin: Vec<Option<(Vec<i64>, u8)>>,
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
    settings: StateSettings,
    /// Stored points, internal coordinates, row-major; the first `dead` are evicted.
    coords: Vec<f64>,
    explored: Vec<bool>,
    /// The round of stored point 0 (stored point i is the point of round first_round + i).
    first_round: u64,
    dead: usize,
    atoms: Atoms,
    /// The length of a packed scatter matrix, d(d + 1)/2.
    packed: usize,
    /// The atom of each (bin, weight class) (binning only).
    bins: HashMap<(Vec<i64>, u8), u64>,
    /// The current side of the bins (binning only): the initial side times a power of two.
    bin_side: f64,
    members: HashMap<CellKey, Vec<u64>>,
    grid: BTreeMap<Vec<i64>, GridCell>,
    grid_side: f64,
    max_reach: f64,
    /// Read from a snapshot, the atoms are not built yet ([`CurveState::rebuild`]).
    pending: bool,
}

/// What a snapshot keeps: the atoms and indexes are rebuilt.
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
    /// The curve and the stored points, checked; the atoms are built by
    /// [`CurveState::rebuild`], which needs the learner's settings.
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
        let mut state = CurveState::empty(
            owned.lattice,
            owned.keys,
            owned.first_round,
            StateSettings {
                weights: [1.0; 3],
                bin_side: None,
                max_atoms: 0,
                warmup_end: 0,
            },
        );
        state.coords = owned.coords;
        state.explored = owned.explored;
        state.pending = true;
        Ok(state)
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
        settings: StateSettings,
    ) -> Self {
        let dim = lattice.dim();
        let mut state = Self::empty(lattice, keys, first_round, settings);
        for (point, explored) in coords.chunks_exact(dim).zip(explored) {
            state.push(point, explored);
        }
        state
    }

    fn empty(lattice: Lattice, keys: Vec<i64>, first_round: u64, settings: StateSettings) -> Self {
        let dim = lattice.dim();
        let n_vertices = keys.len() / dim;
        let mut state = Self {
            lattice,
            dim,
            keys,
            vertices: Vec::new(),
            lengths2: Vec::new(),
            ids: (0..n_vertices as u64).collect(),
            next_id: n_vertices as u64,
            index_of: HashMap::new(),
            settings,
            coords: Vec::new(),
            explored: Vec::new(),
            first_round,
            dead: 0,
            atoms: Atoms::default(),
            packed: dim * (dim + 1) / 2,
            bins: HashMap::new(),
            bin_side: 0.0,
            members: HashMap::new(),
            grid: BTreeMap::new(),
            grid_side: 0.0,
            max_reach: 0.0,
            pending: false,
        };
        state.apply_settings(settings);
        state.refresh_vertices();
        state
    }

    fn apply_settings(&mut self, settings: StateSettings) {
        self.settings = settings;
        let spacing = self.lattice.spacing();
        self.grid_side = match settings.bin_side {
            // A power of two of bins, so that every bin, now or doubled, nests in one grid
            // cell (or the grid cells in one bin).
            Some(side) => {
                self.bin_side = side;
                let mut grid = side;
                while grid < GRID_SPACINGS * spacing {
                    grid *= 2.0;
                }
                grid
            }
            None => GRID_SPACINGS * spacing,
        };
    }

    /// Builds the atoms and indexes of a state read from a snapshot, with the learner's
    /// settings: the stored points are pushed again in round order.
    pub(crate) fn rebuild(&mut self, settings: StateSettings) {
        debug_assert!(self.pending, "rebuild is for a state read from a snapshot");
        let coords = std::mem::take(&mut self.coords);
        let explored = std::mem::take(&mut self.explored);
        let first_round = self.first_round;
        *self = Self::new(
            self.lattice.clone(),
            std::mem::take(&mut self.keys),
            first_round,
            coords,
            explored,
            settings,
        );
    }

    /// The settings the state was built with.
    #[cfg(test)]
    pub(crate) fn settings(&self) -> StateSettings {
        self.settings
    }

    /// The current side of the bins (`None` without binning).
    #[cfg(test)]
    pub(crate) fn bin_side(&self) -> Option<f64> {
        self.merges_points().then_some(self.bin_side)
    }

    /// Whether points are merged into atoms.
    pub(crate) fn merges_points(&self) -> bool {
        self.settings.bin_side.is_some()
    }

    /// Whether every atom has a positive weight (full feedback).
    pub(crate) fn every_point_counts(&self) -> bool {
        self.settings.weights.iter().all(|w| *w > 0.0)
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

    /// The curve in the user's coordinates.
    pub(crate) fn user_curve(&self) -> super::model::PrincipalCurve {
        let dim = self.dim;
        let mut vertices = vec![0.0; self.vertices.len()];
        for (internal, user) in self
            .vertices
            .chunks_exact(dim)
            .zip(vertices.chunks_exact_mut(dim))
        {
            self.lattice.to_user(internal, user);
        }
        super::model::PrincipalCurve::from_line(crate::geometry::Polyline::new_unchecked(
            vertices, dim,
        ))
    }

    /// The class of points of weight `weight` (equal weights share a class, so their atoms).
    fn weight_class(&self, weight: f64) -> u8 {
        self.settings
            .weights
            .iter()
            .position(|w| *w == weight)
            .unwrap_or(0) as u8
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

    /// Stored point `index` (see [`CurveState::live`]).
    #[inline]
    pub(crate) fn point(&self, index: usize) -> &[f64] {
        &self.coords[index * self.dim..(index + 1) * self.dim]
    }

    /// Whether stored point `index` was seen in an exploration round (or the warm-up).
    #[cfg(test)]
    pub(crate) fn point_explored(&self, index: usize) -> bool {
        self.explored[index]
    }

    /// The live stored points' indices, oldest first.
    pub(crate) fn live(&self) -> std::ops::Range<usize> {
        self.dead..self.explored.len()
    }

    /// The weight of stored point `index` in the estimated rewards.
    #[cfg(test)]
    pub(crate) fn point_weight(&self, index: usize) -> f64 {
        let round = self.first_round + index as u64;
        self.settings.weights[self.observation(round, self.explored[index]) as usize]
    }

    fn observation(&self, round: u64, explored: bool) -> Observation {
        if round <= self.settings.warmup_end {
            Observation::WarmUp
        } else if explored {
            Observation::Explored
        } else {
            Observation::Exploited
        }
    }

    // ----- atoms -----

    /// The number of live atoms.
    pub(crate) fn n_atoms(&self) -> usize {
        self.atoms.count.len() - self.atoms.dead
    }

    /// The index of the atom with this id.
    #[inline]
    pub(crate) fn atom_index(&self, id: u64) -> usize {
        (id - self.atoms.first_id) as usize
    }

    /// The live atoms' indices, oldest first.
    pub(crate) fn live_atoms(&self) -> std::ops::Range<usize> {
        self.atoms.dead..self.atoms.count.len()
    }

    /// The mean of atom `index`.
    #[inline]
    pub(crate) fn atom_mean(&self, index: usize) -> &[f64] {
        &self.atoms.mean[index * self.dim..(index + 1) * self.dim]
    }

    /// The number of points of atom `index`.
    #[inline]
    pub(crate) fn atom_count(&self, index: usize) -> f64 {
        self.atoms.count[index]
    }

    /// The total weight of atom `index` in the estimated rewards (count × class weight).
    #[inline]
    pub(crate) fn atom_mass(&self, index: usize) -> f64 {
        self.atoms.count[index] * self.atoms.weight[index]
    }

    /// d_cur of atom `index`: the squared distance from its mean to the curve.
    #[inline]
    pub(crate) fn atom_distance(&self, index: usize) -> f64 {
        self.atoms.distance[index]
    }

    #[inline]
    pub(crate) fn atom_cell(&self, index: usize) -> CellKey {
        self.atoms.cell[index]
    }

    /// The spread term of atom `index` on its current part (0 without binning).
    #[inline]
    pub(crate) fn atom_spread(&self, index: usize) -> f64 {
        if self.merges_points() {
            self.atoms.spread[index]
        } else {
            0.0
        }
    }

    /// The packed scatter matrix of atom `index` (binning only).
    #[inline]
    pub(crate) fn atom_scatter(&self, index: usize) -> &[f64] {
        &self.atoms.scatter[index * self.packed..(index + 1) * self.packed]
    }

    /// The spread term of atom `index` on `part` of the current curve: tr C on a vertex,
    /// tr C − uᵀCu on a segment (0 without binning).
    pub(crate) fn spread_on(&self, index: usize, part: Part) -> f64 {
        if !self.merges_points() {
            return 0.0;
        }
        self.spread_of(self.atom_scatter(index), part)
    }

    /// The spread term of a packed scatter on `part` of the current curve.
    pub(crate) fn spread_of(&self, scatter: &[f64], part: Part) -> f64 {
        match part {
            Part::Vertex(_) => trace(scatter, self.dim),
            Part::Segment(i) => segment_spread(
                scatter,
                self.vertex(i),
                self.vertex(i + 1),
                self.lengths2[i],
            ),
        }
    }

    /// The atoms of a cell, by id.
    pub(crate) fn members(&self, key: CellKey) -> &[u64] {
        self.members.get(&key).map_or(&[], Vec::as_slice)
    }

    /// Stores a point (internal coordinates) and returns its nearest part of the curve and
    /// its squared distance; the point joins the atom of its bin, or makes a new one.
    pub(crate) fn push(&mut self, point: &[f64], explored: bool) -> (Part, f64) {
        let (part, distance) = self.nearest(point);
        let round = self.end_round();
        self.coords.extend_from_slice(point);
        self.explored.push(explored);
        let weight = self.settings.weights[self.observation(round, explored) as usize];
        if self.settings.bin_side.is_some() {
            let side = self.bin_side;
            // A point outside the ball stays alone: its reward may be clipped at 0, which a
            // sum of quadratics cannot express.
            if self.lattice.ball_contains(point) {
                // Classes of equal weight share atoms.
                let class = self.weight_class(weight);
                let bin: Vec<i64> = point.iter().map(|v| (v / side).floor() as i64).collect();
                let key = (bin, class);
                if let Some(&id) = self.bins.get(&key) {
                    self.add_to_atom(id, point);
                } else {
                    let id = self.new_atom(point, weight, part, distance, Some(key.clone()));
                    self.bins.insert(key, id);
                    self.keep_within_budget();
                }
                return (part, distance);
            }
        }
        self.new_atom(point, weight, part, distance, None);
        self.keep_within_budget();
        (part, distance)
    }

    /// Doubles the side of the bins, merging their atoms, while there are more atoms than
    /// the budget and merging still reduces them (bins no wider than the ball).
    fn keep_within_budget(&mut self) {
        let budget = self.settings.max_atoms;
        if budget == 0 || self.settings.bin_side.is_none() {
            return;
        }
        while self.n_live_atoms() > budget && self.bin_side < 2.0 * self.lattice.ball_radius() {
            let before = self.n_live_atoms();
            self.coarsen();
            if self.n_live_atoms() == before {
                break;
            }
        }
    }

    fn n_live_atoms(&self) -> usize {
        self.atoms.count.len() - self.atoms.dead
    }

    /// Doubles the bins' side: the atoms of the (new bin, class) merge, in id order
    /// (count, mean and scatter combine exactly: n = n_a + n_b, m = m_a + (n_b/n)(m_b − m_a),
    /// C = C_a + C_b + (n_a n_b/n)(m_b − m_a)(m_b − m_a)ᵀ), and every index is rebuilt.
    fn coarsen(&mut self) {
        let dim = self.dim;
        let packed = self.packed;
        self.bin_side *= 2.0;
        if self.bin_side > self.grid_side {
            self.grid_side = self.bin_side;
        }
        let old = std::mem::take(&mut self.atoms);
        let mut atoms = Atoms::default();
        let mut bins: HashMap<(Vec<i64>, u8), u64> = HashMap::new();
        let mut difference = vec![0.0; dim];
        for index in old.dead..old.count.len() {
            let mean = &old.mean[index * dim..(index + 1) * dim];
            let scatter = &old.scatter[index * packed..(index + 1) * packed];
            let merged_key = old.bin[index].as_ref().map(|(key, class)| {
                let key: Vec<i64> = key.iter().map(|k| k.div_euclid(2)).collect();
                (key, *class)
            });
            if let Some(&id) = merged_key.as_ref().and_then(|key| bins.get(key)) {
                let target = id as usize;
                let (n_a, n_b) = (atoms.count[target], old.count[index]);
                let n = n_a + n_b;
                let target_mean = &mut atoms.mean[target * dim..(target + 1) * dim];
                for ((d, m), x) in difference.iter_mut().zip(target_mean.iter_mut()).zip(mean) {
                    *d = x - *m;
                    *m += *d * (n_b / n);
                }
                let factor = n_a * n_b / n;
                let target_scatter = &mut atoms.scatter[target * packed..(target + 1) * packed];
                let mut slot = 0;
                for r in 0..dim {
                    for c in r..dim {
                        target_scatter[slot] +=
                            scatter[slot] + factor * difference[r] * difference[c];
                        slot += 1;
                    }
                }
                atoms.count[target] = n;
                continue;
            }
            let id = atoms.count.len() as u64;
            atoms.mean.extend_from_slice(mean);
            atoms.count.push(old.count[index]);
            atoms.weight.push(old.weight[index]);
            atoms.scatter.extend_from_slice(scatter);
            if let Some(key) = &merged_key {
                bins.insert(key.clone(), id);
            }
            atoms.bin.push(merged_key);
        }
        // Every index from the merged atoms, in id order.
        self.members.clear();
        self.grid.clear();
        self.max_reach = 0.0;
        let n = atoms.count.len();
        atoms.distance = vec![0.0; n];
        atoms.spread = vec![0.0; n];
        atoms.cell = Vec::with_capacity(n);
        atoms.grid = Vec::with_capacity(n * dim);
        self.atoms = atoms;
        self.bins = bins;
        for index in 0..n {
            let (part, distance) = self.nearest(self.atom_mean(index));
            let key = self.cell_key(part);
            self.atoms.cell.push(key);
            self.atoms.distance[index] = distance;
            self.atoms.spread[index] = self.spread_on(index, part);
            let grid_key = self.atom_grid_key(index);
            self.atoms.grid.extend_from_slice(&grid_key);
            self.members.entry(key).or_default().push(index as u64);
            let reach = distance.sqrt();
            let cell = self.grid.entry(grid_key).or_default();
            cell.ids.push(index as u64);
            cell.reach = cell.reach.max(reach);
            self.max_reach = self.max_reach.max(reach);
        }
    }

    /// The grid cell of an atom: from its bin when it has one (bins nest in grid cells), else
    /// from its mean (which then never moves).
    fn atom_grid_key(&self, index: usize) -> Vec<i64> {
        match &self.atoms.bin[index] {
            Some((key, _)) => {
                let ratio = (self.grid_side / self.bin_side).round() as i64;
                key.iter().map(|k| k.div_euclid(ratio)).collect()
            }
            None => self.grid_key(self.atom_mean(index)),
        }
    }

    /// The grid cell of atom `index`, as stored.
    fn atom_grid(&self, index: usize) -> &[i64] {
        &self.atoms.grid[index * self.dim..(index + 1) * self.dim]
    }

    fn new_atom(
        &mut self,
        point: &[f64],
        weight: f64,
        part: Part,
        distance: f64,
        bin: Option<(Vec<i64>, u8)>,
    ) -> u64 {
        let atoms = &mut self.atoms;
        let id = atoms.first_id + atoms.count.len() as u64;
        let index = atoms.count.len();
        atoms.mean.extend_from_slice(point);
        atoms.count.push(1.0);
        atoms.weight.push(weight);
        atoms.distance.push(distance);
        atoms.bin.push(bin);
        let key = self.cell_key(part);
        self.atoms.cell.push(key);
        if self.merges_points() {
            self.atoms
                .scatter
                .extend(std::iter::repeat_n(0.0, self.packed));
            self.atoms.spread.push(0.0);
        }
        // The newest id: the end of every sorted list.
        self.members.entry(key).or_default().push(id);
        let grid_key = self.atom_grid_key(index);
        self.atoms.grid.extend_from_slice(&grid_key);
        let reach = distance.sqrt();
        let cell = self.grid.entry(grid_key).or_default();
        cell.ids.push(id);
        cell.reach = cell.reach.max(reach);
        self.max_reach = self.max_reach.max(reach);
        id
    }

    /// Adds a point to an atom (Welford: the mean and the scatter follow the points in
    /// round order) and moves the atom to the cell of its new mean.
    fn add_to_atom(&mut self, id: u64, point: &[f64]) {
        let index = self.atom_index(id);
        let dim = self.dim;
        let count = self.atoms.count[index] + 1.0;
        self.atoms.count[index] = count;
        // x − m before and after the update: C += (x − m_old)(x − m_new)ᵀ.
        let mut before = vec![0.0; dim];
        let mut after = vec![0.0; dim];
        {
            let mean = &mut self.atoms.mean[index * dim..(index + 1) * dim];
            for ((m, x), (b, a)) in mean
                .iter_mut()
                .zip(point)
                .zip(before.iter_mut().zip(after.iter_mut()))
            {
                *b = x - *m;
                *m += *b / count;
                *a = x - *m;
            }
        }
        {
            let scatter = &mut self.atoms.scatter[index * self.packed..(index + 1) * self.packed];
            let mut slot = 0;
            for r in 0..dim {
                for c in r..dim {
                    scatter[slot] += before[r] * after[c];
                    slot += 1;
                }
            }
        }
        let (part, distance) = self.nearest(self.atom_mean(index));
        let key = self.cell_key(part);
        let old = self.atoms.cell[index];
        if key != old {
            if let Some(list) = self.members.get_mut(&old) {
                remove_sorted(list, id);
                if list.is_empty() {
                    self.members.remove(&old);
                }
            }
            insert_sorted(self.members.entry(key).or_default(), id);
            self.atoms.cell[index] = key;
        }
        self.atoms.distance[index] = distance;
        self.atoms.spread[index] = self.spread_on(index, part);
        let reach = distance.sqrt();
        let grid_key = self.atom_grid(index).to_vec();
        if let Some(cell) = self.grid.get_mut(&grid_key) {
            cell.reach = cell.reach.max(reach);
        }
        self.max_reach = self.max_reach.max(reach);
    }

    /// Forgets the oldest stored point (window memory, where every atom is one point).
    pub(crate) fn evict_oldest(&mut self) {
        debug_assert!(!self.merges_points(), "window memory keeps points apart");
        let index = self.atoms.dead;
        let id = self.atoms.first_id + index as u64;
        let key = self.atoms.cell[index];
        if let Some(list) = self.members.get_mut(&key) {
            remove_sorted(list, id);
            if list.is_empty() {
                self.members.remove(&key);
            }
        }
        let grid_key = self.atom_grid(index).to_vec();
        if let Some(cell) = self.grid.get_mut(&grid_key) {
            remove_sorted(&mut cell.ids, id);
            if cell.ids.is_empty() {
                self.grid.remove(&grid_key);
            }
        }
        self.atoms.dead += 1;
        self.dead += 1;
        // Amortised O(1): drop the evicted prefix once it is as long as what remains.
        if self.dead >= 1024 && self.dead >= self.explored.len() / 2 {
            let dead = self.dead;
            self.coords.drain(..dead * self.dim);
            self.explored.drain(..dead);
            self.first_round += dead as u64;
            self.dead = 0;
            let atoms = &mut self.atoms;
            let gone = atoms.dead;
            atoms.mean.drain(..gone * self.dim);
            atoms.count.drain(..gone);
            atoms.weight.drain(..gone);
            atoms.distance.drain(..gone);
            atoms.cell.drain(..gone);
            atoms.grid.drain(..gone * self.dim);
            atoms.bin.drain(..gone);
            atoms.first_id += gone as u64;
            atoms.dead = 0;
        }
    }

    fn grid_key(&self, point: &[f64]) -> Vec<i64> {
        point
            .iter()
            .map(|v| (v / self.grid_side).floor() as i64)
            .collect()
    }

    /// Calls `visit(index)` for every atom with ‖m − centre‖ ≤ radius + √d_cur(m) (and
    /// possibly a few more: the test is conservative), grid cell by grid cell in key order,
    /// by id within a cell.
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
            for &id in &cell.ids {
                let index = (id - self.atoms.first_id) as usize;
                let mean = &self.atoms.mean[index * dim..(index + 1) * dim];
                let limit = slack(radius + self.atoms.distance[index].sqrt());
                if squared_distance(mean, centre) <= limit * limit {
                    visit(index);
                }
            }
        };
        // Enumerate the box of grid cells that can hold such atoms when it is smaller than
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

    /// Replaces vertices `first..=last` by `new_keys` (row-major) and gives every atom in
    /// `updates` its new distance and part (parts of the *new* curve).
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
        // atoms, and one sorted insertion or removal at a time would be quadratic.
        let mut leaving: HashMap<CellKey, Vec<u64>> = HashMap::new();
        let mut arriving: HashMap<CellKey, Vec<u64>> = HashMap::new();
        for &(index, distance, part) in updates {
            let id = self.atoms.first_id + index as u64;
            let old = self.atoms.cell[index];
            let new = self.cell_key(part);
            if old != new {
                leaving.entry(old).or_default().push(id);
                arriving.entry(new).or_default().push(id);
                self.atoms.cell[index] = new;
            }
            if self.merges_points() {
                self.atoms.spread[index] = self.spread_on(index, part);
            }
            if distance != self.atoms.distance[index] {
                self.atoms.distance[index] = distance;
                touched_grid.push(self.atom_grid(index).to_vec());
            }
        }
        for (key, mut ids) in leaving {
            ids.sort_unstable();
            if let Some(list) = self.members.get_mut(&key) {
                // Both sorted: one merge-like pass.
                let mut gone = ids.iter().peekable();
                list.retain(|id| {
                    while gone.peek().is_some_and(|g| **g < *id) {
                        gone.next();
                    }
                    gone.peek() != Some(&id)
                });
                if list.is_empty() {
                    self.members.remove(&key);
                }
            }
        }
        for (key, mut ids) in arriving {
            ids.sort_unstable();
            let list = self.members.entry(key).or_default();
            let old = std::mem::take(list);
            list.reserve(old.len() + ids.len());
            let (mut a, mut b) = (old.into_iter().peekable(), ids.into_iter().peekable());
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
        // Exact bounds for the grid cells whose atoms moved (the others stay upper bounds).
        touched_grid.sort_unstable();
        touched_grid.dedup();
        for key in touched_grid {
            if let Some(cell) = self.grid.get_mut(&key) {
                cell.reach = cell
                    .ids
                    .iter()
                    .map(|&id| self.atoms.distance[(id - self.atoms.first_id) as usize].sqrt())
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

    /// Recomputes every atom's part, distance and spread from scratch and compares them
    /// with the incremental ones; and compares the atoms with a state rebuilt from the
    /// stored points (tests only).
    #[cfg(test)]
    pub(crate) fn check_partition(&self) -> Result<(), String> {
        for index in self.live_atoms() {
            let (part, distance) = self.nearest(self.atom_mean(index));
            let key = self.cell_key(part);
            if key != self.atoms.cell[index] || distance != self.atoms.distance[index] {
                return Err(format!(
                    "atom {index}: fresh {part:?} {distance} incremental {:?} {}",
                    self.part_of(self.atoms.cell[index]),
                    self.atoms.distance[index]
                ));
            }
            if self.merges_points() && self.spread_on(index, part) != self.atoms.spread[index] {
                return Err(format!("atom {index}: stale spread"));
            }
            if !self
                .members(key)
                .contains(&(self.atoms.first_id + index as u64))
            {
                return Err(format!("atom {index} is missing from its cell's list"));
            }
        }
        if self
            .members
            .values()
            .any(|list| list.windows(2).any(|w| w[0] >= w[1]))
        {
            return Err("a cell's list is not in increasing id".to_string());
        }
        let listed: usize = self.members.values().map(Vec::len).sum();
        if listed != self.n_atoms() {
            return Err(format!("{listed} listed for {} atoms", self.n_atoms()));
        }
        let counted: f64 = self.live_atoms().map(|a| self.atoms.count[a]).sum();
        if counted != self.n_points() as f64 {
            return Err(format!(
                "{counted} points in atoms, {} stored",
                self.n_points()
            ));
        }
        if self.merges_points() {
            self.check_atoms_summarise_their_points()?;
        }
        let rebuilt = Self::new(
            self.lattice.clone(),
            self.keys.clone(),
            self.oldest_round(),
            self.coords[self.dead * self.dim..].to_vec(),
            self.explored[self.dead..].to_vec(),
            self.settings,
        );
        let live = |s: &Self| {
            s.live_atoms()
                .map(|a| {
                    (
                        s.atom_mean(a).to_vec(),
                        s.atoms.count[a],
                        s.atoms.weight[a],
                        s.atoms.distance[a],
                        s.part_of(s.atoms.cell[a]),
                        s.atom_spread(a),
                        if s.merges_points() {
                            s.atom_scatter(a).to_vec()
                        } else {
                            Vec::new()
                        },
                    )
                })
                .collect::<Vec<_>>()
        };
        if live(self) != live(&rebuilt) {
            return Err("the atoms differ from a state rebuilt from the stored points".into());
        }
        Ok(())
    }
}

impl CurveState {
    /// Every binned atom's count, mean and scatter equal those computed directly from the
    /// stored points of its bin and class at the current side (tests only).
    #[cfg(test)]
    fn check_atoms_summarise_their_points(&self) -> Result<(), String> {
        let dim = self.dim;
        // (count, Σx, Σxxᵀ packed) of each (bin, class).
        type Sums = (f64, Vec<f64>, Vec<f64>);
        let mut sums: HashMap<(Vec<i64>, u8), Sums> = HashMap::new();
        for index in self.live() {
            let point = self.point(index);
            if !self.lattice.ball_contains(point) {
                continue;
            }
            let weight = self.point_weight(index);
            let class = self.weight_class(weight);
            let bin: Vec<i64> = point
                .iter()
                .map(|v| (v / self.bin_side).floor() as i64)
                .collect();
            let entry = sums
                .entry((bin, class))
                .or_insert_with(|| (0.0, vec![0.0; dim], vec![0.0; self.packed]));
            entry.0 += 1.0;
            let mut slot = 0;
            for r in 0..dim {
                entry.1[r] += point[r];
                for c in r..dim {
                    entry.2[slot] += point[r] * point[c];
                    slot += 1;
                }
            }
        }
        for index in self.live_atoms() {
            let Some(key) = &self.atoms.bin[index] else {
                continue;
            };
            let (n, sum, squares) = sums
                .get(key)
                .ok_or_else(|| format!("atom {index}: no stored point in its bin"))?;
            let mean = self.atom_mean(index);
            let scale = 1.0 + squares.iter().map(|v| v.abs()).sum::<f64>();
            let mut worst = (*n - self.atoms.count[index]).abs();
            let mut slot = 0;
            for r in 0..dim {
                worst = worst.max((sum[r] / n - mean[r]).abs());
                for c in r..dim {
                    let direct = squares[slot] - sum[r] * sum[c] / n;
                    worst = worst.max((direct - self.atom_scatter(index)[slot]).abs() / scale);
                    slot += 1;
                }
            }
            if worst > 1e-9 {
                return Err(format!(
                    "atom {index} does not summarise its points ({worst:e})"
                ));
            }
        }
        Ok(())
    }
}

/// tr C of a packed scatter matrix.
#[inline]
pub(crate) fn trace(scatter: &[f64], dim: usize) -> f64 {
    let mut sum = 0.0;
    let mut slot = 0;
    for r in 0..dim {
        sum += scatter[slot];
        slot += dim - r;
    }
    sum
}

/// tr C − uᵀCu for the unit direction u of the segment [a, b] (squared length `length2`):
/// the part of an atom's scatter that the segment does not absorb.
#[inline]
pub(crate) fn segment_spread(scatter: &[f64], a: &[f64], b: &[f64], length2: f64) -> f64 {
    let dim = a.len();
    let mut along = 0.0;
    let mut total = 0.0;
    let mut slot = 0;
    for r in 0..dim {
        let dr = b[r] - a[r];
        total += scatter[slot];
        along += scatter[slot] * dr * dr;
        slot += 1;
        for c in r + 1..dim {
            along += 2.0 * scatter[slot] * dr * (b[c] - a[c]);
            slot += 1;
        }
    }
    (total - along / length2).max(0.0)
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

fn remove_sorted(list: &mut Vec<u64>, id: u64) {
    if let Ok(position) = list.binary_search(&id) {
        list.remove(position);
    }
}

fn insert_sorted(list: &mut Vec<u64>, id: u64) {
    if let Err(position) = list.binary_search(&id) {
        list.insert(position, id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sufficient statistics give the exact loss of an atom on a vertex and on a segment
    /// its points project inside.
    #[test]
    fn spread_terms_complete_the_loss_of_the_mean() {
        let points = [[0.3, 0.2], [0.5, -0.1], [0.45, 0.05], [0.6, 0.15]];
        let n = points.len() as f64;
        let mut mean = [0.0; 2];
        for p in &points {
            mean[0] += p[0] / n;
            mean[1] += p[1] / n;
        }
        let mut scatter = [0.0; 3];
        for p in &points {
            let (x, y) = (p[0] - mean[0], p[1] - mean[1]);
            scatter[0] += x * x;
            scatter[1] += x * y;
            scatter[2] += y * y;
        }
        let vertex = [1.0, 1.0];
        let direct: f64 = points.iter().map(|p| squared_distance(p, &vertex)).sum();
        let atom = n * squared_distance(&mean, &vertex) + trace(&scatter, 2);
        assert!((direct - atom).abs() < 1e-12, "{direct} vs {atom}");
        let (a, b) = ([0.0, -1.0], [1.0, 1.0]);
        let length2 = squared_distance(&a, &b);
        let segment = |x: &[f64]| {
            interior(squared_distance(x, &a), squared_distance(x, &b), length2).unwrap()
        };
        let direct: f64 = points.iter().map(|p| segment(p)).sum();
        let atom = n * segment(&mean) + segment_spread(&scatter, &a, &b, length2);
        assert!((direct - atom).abs() < 1e-12, "{direct} vs {atom}");
    }
}
